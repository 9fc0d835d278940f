"""Dist: which process of a distributed job this is, and the collectives
that join the processes (a ct_dist), over the backend chosen at run time —
local, shm, tcp or mpi."""

import ctypes
import numbers
import socket

from ._args import _decode, _encode
from ._errors import check
from ._handle import OwnedHandle
from ._lib import Handle, lib

_OPS = {"sum": 0, "avg": 1}
_DTYPES = {"f32": (0, 4), "bf16": (1, 2)}  # ct_dtype value, bytes per element


def _writable(buffer, what):
    """A ctypes view of a writable, C-contiguous buffer (numpy array,
    bytearray, array.array, ctypes array), sharing its memory."""
    view = memoryview(buffer)
    if view.readonly or not view.c_contiguous:
        raise ValueError("%s must be a writable, C-contiguous buffer" % what)
    view = view.cast("B")
    return (ctypes.c_char * view.nbytes).from_buffer(view), view.nbytes


def _option_text(value):
    if isinstance(value, bool):
        raise TypeError("dist options take str, int or float values, not bool")
    if isinstance(value, (numbers.Integral, numbers.Real)):
        return repr(value)
    if isinstance(value, str):
        return value
    raise TypeError("dist options take str, int or float values, not %s" % type(value).__name__)


def _made_with(options, create):
    """The handle create(ct_dist_options, out) makes from the keyword options."""
    opts = Handle()
    check(lib.ct_dist_options_create(ctypes.byref(opts)))
    try:
        for key, value in options.items():
            check(lib.ct_dist_options_set(opts, _encode(key), _encode(_option_text(value))))
        handle = Handle()
        check(create(opts, ctypes.byref(handle)))
    finally:
        lib.ct_dist_options_free(opts)
    return handle


class Dist(OwnedHandle):
    """Join the job this process belongs to:

        dist = Dist()                              # all from the environment
        dist = Dist(backend="tcp", timeout=60)     # some options explicit
        dist.allreduce(grads, op="avg")            # numpy float32 array, in place

    Options (ct_dist_options keys): backend (auto, local, shm, tcp, mpi),
    rank, world_size, local_rank, local_world_size, master_addr,
    master_port, timeout (seconds), job, secret or secret_file (the job's
    shared secret, which ranks prove they hold before they are admitted).
    Unset ones come from the launcher's environment (torchrun / PyTorchJob,
    Intel MPI / MPICH, Open MPI), CPUTRAIN_DIST_BACKEND, CPUTRAIN_DIST_JOB
    and CPUTRAIN_DIST_SECRET_FILE / CPUTRAIN_DIST_SECRET. Returns once every
    rank has joined."""

    _free = lib.ct_dist_free
    _what = "Dist"
    __slots__ = ("_handle",)

    def __init__(self, **options):
        self._handle = _made_with(options, lambda opts, out: lib.ct_dist_create(opts, out))

    def __reduce__(self):
        raise TypeError("a Dist cannot be pickled")

    rank = property(lambda self: lib.ct_dist_rank(self._live()))
    world_size = property(lambda self: lib.ct_dist_world_size(self._live()))
    local_rank = property(lambda self: lib.ct_dist_local_rank(self._live()))
    local_world_size = property(lambda self: lib.ct_dist_local_world_size(self._live()))
    backend = property(lambda self: _decode(lib.ct_dist_backend(self._live())))
    launcher = property(lambda self: _decode(lib.ct_dist_launcher(self._live())))
    timeout = property(lambda self: lib.ct_dist_timeout(self._live()))

    def allreduce(self, buffer, op="sum", dtype="f32"):
        """Sum ("sum") or mean ("avg") of `buffer` over all ranks, in place.
        dtype "f32" (4-byte floats) or "bf16" (2-byte bfloat16 bit patterns,
        e.g. a numpy uint16 array, accumulated in fp32)."""
        if op not in _OPS:
            raise ValueError("op must be 'sum' or 'avg', not %r" % (op,))
        if dtype not in _DTYPES:
            raise ValueError("dtype must be 'f32' or 'bf16', not %r" % (dtype,))
        code, size = _DTYPES[dtype]
        data, nbytes = _writable(buffer, "allreduce's buffer")
        if nbytes % size:
            raise ValueError("a %s buffer of %d bytes is not whole elements" % (dtype, nbytes))
        check(lib.ct_dist_allreduce(self._live(), data, nbytes // size, code, _OPS[op]))

    def broadcast(self, buffer, root=0):
        """Rank root's bytes of `buffer` into every other rank's, in place."""
        data, nbytes = _writable(buffer, "broadcast's buffer")
        check(lib.ct_dist_broadcast(self._live(), data, nbytes, root))

    def barrier(self):
        check(lib.ct_dist_barrier(self._live()))

    def allgather(self, data):
        """Every rank's `data` (bytes of the same length on every rank), as a
        list in rank order."""
        data = bytes(data)
        world = self.world_size
        out = ctypes.create_string_buffer(len(data) * world)
        check(lib.ct_dist_allgather(self._live(), data, len(data), out))
        raw = out.raw
        return [raw[r * len(data):(r + 1) * len(data)] for r in range(world)]

    def __repr__(self):
        if not self._handle:
            return "<closed Dist>"
        return "<Dist rank %d of %d, backend %s>" % (self.rank, self.world_size, self.backend)


class Rendezvous(OwnedHandle):
    """Authenticated connections of a job's own (ct_rendezvous_*): the tcp
    backend's handshake, keyed by the job's secret, for programs that meet
    over sockets of their own:

        rv = Rendezvous("my-job", secret_file="/run/secrets/job")
        sock, peer = rv.accept(listener, timeout=30)   # (None, None) if time passed
        sock = rv.connect("10.0.0.1", 29500, timeout=30)

    Options as Dist's (secret, secret_file); none: the environment. The
    sockets are blocking and the caller's. A refused peer raises
    CputrainError with ERR_DIST (trying again will not help), one not
    reached in time ERR_IO."""

    _free = lib.ct_rendezvous_free
    _what = "Rendezvous"
    __slots__ = ("_handle",)

    def __init__(self, job, **options):
        self._handle = _made_with(
            options, lambda opts, out: lib.ct_rendezvous_create(opts, _encode(job), out))

    def __reduce__(self):
        raise TypeError("a Rendezvous cannot be pickled")

    has_secret = property(lambda self: bool(lib.ct_rendezvous_has_secret(self._live())))

    def accept(self, listener, timeout):
        """The next peer on `listener` (a listening socket, made
        non-blocking) that proves it holds the secret: (socket, "host:port"),
        or (None, None) when `timeout` seconds passed."""
        fd = ctypes.c_int(-1)
        addr = ctypes.create_string_buffer(128)
        check(lib.ct_rendezvous_accept(self._live(), listener.fileno(), float(timeout),
                                       ctypes.byref(fd), addr, len(addr)))
        if fd.value < 0:
            return None, None
        return socket.socket(fileno=fd.value), _decode(addr.value)

    def connect(self, host, port, timeout):
        """A socket to host:port whose end proved it holds the secret."""
        fd = ctypes.c_int(-1)
        check(lib.ct_rendezvous_connect(self._live(), _encode(host), int(port), float(timeout),
                                        ctypes.byref(fd)))
        return socket.socket(fileno=fd.value)

    def __repr__(self):
        if not self._handle:
            return "<closed Rendezvous>"
        return "<Rendezvous%s>" % ("" if self.has_secret else " without a secret")
