"""OwnedHandle: the base of every class that owns one C handle (ct_X *).

close() or the end of a with block frees it at once, garbage collection
later; any use after close raises ValueError. Subclasses name the free
function and themselves, and extend close() or _live() where they need to."""


class OwnedHandle:
    __slots__ = ()      # subclasses list theirs, "_handle" among them
    _handle = None
    _free = None        # the ct_X_free function of the subclass
    _what = "object"    # the class's name in messages

    def close(self):
        """Free the handle now; any later use raises ValueError."""
        handle, self._handle = self._handle, None
        if handle:
            type(self)._free(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        # Only the handle, through the class: at interpreter exit the
        # module's globals and other attributes may already be gone.
        handle = getattr(self, "_handle", None)
        if handle:
            self._handle = None
            type(self)._free(handle)

    def _live(self):
        if not self._handle:
            raise ValueError("operation on a closed %s" % self._what)
        return self._handle
