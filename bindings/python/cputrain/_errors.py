"""The Status enum (read from the library, so it always matches the loaded
one) and CputrainError, raised for every status other than CT_OK."""

import enum

from ._lib import lib


def _read_statuses():
    # Values are pinned and contiguous (a retired status keeps its slot and
    # its name), so the first unknown value is one past the last status.
    members = {}
    value = 0
    while True:
        name = lib.ct_status_name(value).decode()
        if name == "CT_UNKNOWN_STATUS":
            return members
        members[name[len("CT_"):] if name.startswith("CT_") else name] = value
        value += 1


# Status.OK, Status.ERR_FORMAT, ...; Status.ERR_FORMAT.c_name is "CT_ERR_FORMAT".
Status = enum.IntEnum("Status", _read_statuses(), module=__name__)
Status.c_name = property(lambda self: lib.ct_status_name(self.value).decode())
Status.description = property(lambda self: lib.ct_status_description(self.value).decode())


class CputrainError(Exception):
    """A libcputrain call failed.

    status:      the ct_status (a Status member when this package knows it)
    status_name: its C name, e.g. "CT_ERR_FORMAT"
    message:     ct_last_error() as read right after the failing call
    """

    def __init__(self, status, message):
        try:
            status = Status(status)
        except ValueError:
            pass  # a status newer than this package: keep the number
        self.status = status
        self.status_name = lib.ct_status_name(int(status)).decode()
        self.message = message
        super().__init__("%s: %s" % (self.status_name, message))

    def __reduce__(self):
        return (type(self), (int(self.status), self.message))


def error_from_status(status):
    """The exception for a failed call. Must run on the thread that made the
    call, before any other library call: ct_last_error() is per thread and
    the next failure replaces it."""
    return CputrainError(status, lib.ct_last_error().decode("utf-8", "replace"))


def check(status):
    """Raise CputrainError unless `status` (a returned ct_status) is CT_OK."""
    if status != 0:
        raise error_from_status(status)
