"""Placement: which cores one local rank's threads run on and which NUMA
node its memory comes from (a ct_placement), planned from the machine's
topology; Model.set_placement applies it."""

import ctypes
import numbers
import os

from ._args import _decode, _encode
from ._errors import check
from ._handle import OwnedHandle
from ._lib import Handle, lib


def _int(value, what, low):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError("%s must be an int, not %s" % (what, type(value).__name__))
    if not low <= value < (1 << 31):
        raise ValueError("%s must be in [%d, 2**31), not %d" % (what, low, value))
    return int(value)


class Placement(OwnedHandle):
    """The plan of local rank `local_rank` of `local_world_size` on one
    machine: a socket / NUMA node per rank while there are enough, an even
    split of the cores otherwise; one thread per physical core.

        placement = Placement(local_rank=0, local_world_size=2)
        print(placement.describe())    # "rank 0 -> node 0 -> cores 0-3 ..."
        model.set_placement(placement)

    topology: None for this machine, else an hwloc synthetic description
    ("package:2 numa:1 core:8 pu:2") or an lstopo XML file (such a plan can
    be printed, not applied). threads: 0 takes OMP_NUM_THREADS, else the
    share's cores."""

    _free = lib.ct_placement_free
    _what = "Placement"
    __slots__ = ("_handle",)

    def __init__(self, local_rank=0, local_world_size=1, threads=0, topology=None):
        if topology is not None:
            if not isinstance(topology, (str, bytes, os.PathLike)):
                raise TypeError("topology must be None, a str or a path, not %s"
                                % type(topology).__name__)
            topology = os.fspath(topology)
            if isinstance(topology, str):
                topology = _encode(topology)
        handle = Handle()
        check(lib.ct_placement_create(topology, _int(local_rank, "local_rank", 0),
                                      _int(local_world_size, "local_world_size", 1),
                                      _int(threads, "threads", 0), ctypes.byref(handle)))
        self._handle = handle

    def __reduce__(self):
        raise TypeError("a Placement cannot be pickled; create it again")

    @property
    def threads(self):
        """Worker threads of the plan, the calling thread included."""
        return lib.ct_placement_threads(self._live())

    @property
    def numa_node(self):
        """The NUMA node (OS index) the rank's memory comes from."""
        return lib.ct_placement_numa_node(self._live())

    def thread_cpus(self, thread):
        """Linux CPU numbers (PUs) of thread `thread` (0: the caller's)."""
        handle = self._live()
        if isinstance(thread, bool) or not isinstance(thread, numbers.Integral):
            raise TypeError("thread must be an int, not %s" % type(thread).__name__)
        n = lib.ct_placement_thread_cpus(handle, thread, None, 0) if 0 <= thread < (1 << 31) else -1
        if n < 0:
            raise IndexError("thread %d is outside the plan's %d threads"
                             % (thread, lib.ct_placement_threads(handle)))
        cpus = (ctypes.c_int * max(n, 1))()
        lib.ct_placement_thread_cpus(handle, thread, cpus, n)
        return list(cpus[:n])

    def describe(self):
        """The plan as one line; once applied, a second line with what the
        threads' affinity read back as."""
        return _decode(lib.ct_placement_describe(self._live()))

    def __str__(self):
        return self.describe() if self._handle else "<closed Placement>"

    def __repr__(self):
        if not self._handle:
            return "<closed Placement>"
        return "<Placement %s>" % self.describe().split("\n")[0]
