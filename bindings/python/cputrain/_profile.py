"""The profile of where the library's time goes, by kernel family
(ct_profile_*), and the machine's peaks it is read against
(ct_kernel_peak)."""

import ctypes

from ._errors import check
from ._lib import lib

_PRECISIONS = {"fp32": 0, "bf16": 1}


def set_profile_enabled(enabled=True):
    """Start (or stop) summing time, calls, FLOPs and bytes per family."""
    lib.ct_profile_set_enabled(1 if enabled else 0)


def reset_profile():
    lib.ct_profile_reset()


def profile():
    """{family: {"seconds", "calls", "flops", "bytes"}} in the library's
    order: gemm_forward, gemm_input_grad, ..., allreduce_wait."""
    out = {}
    sec, flops, nbytes = ctypes.c_double(), ctypes.c_double(), ctypes.c_double()
    calls = ctypes.c_int64()
    for i in range(lib.ct_profile_count()):
        check(lib.ct_profile_get(i, ctypes.byref(sec), ctypes.byref(calls), ctypes.byref(flops),
                                 ctypes.byref(nbytes)))
        out[lib.ct_profile_name(i).decode()] = {"seconds": sec.value, "calls": calls.value,
                                                "flops": flops.value, "bytes": nbytes.value}
    return out


def kernel_peak(precision="bf16", threads=0):
    """(GEMM GFLOP/s, memory GB/s) this machine's kernels reach; about a
    second. threads 0: as a model would get."""
    if precision not in _PRECISIONS:
        raise ValueError("precision must be 'fp32' or 'bf16', not %r" % (precision,))
    gflops, gbs = ctypes.c_double(), ctypes.c_double()
    check(lib.ct_kernel_peak(_PRECISIONS[precision], int(threads), ctypes.byref(gflops),
                             ctypes.byref(gbs)))
    return gflops.value, gbs.value
