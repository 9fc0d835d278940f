"""OutputLock: output_dir held for a whole run of a program (a
ct_output_lock), so that no other run writes into it meanwhile."""

import ctypes
import os

from ._errors import check
from ._handle import OwnedHandle
from ._lib import Handle, lib


class OutputLock(OwnedHandle):
    """Hold output_dir from before a program's first file to after its last:

        with cputrain.OutputLock(args.output_dir):
            ...evaluate, train, write results...

    The folder (and its parents) is made when missing and locked through
    output_dir/.lock; another run holding it raises CputrainError
    (status CT_ERR_BUSY) naming the holder's pid. A Trainer of this process
    training into the same folder meanwhile joins this lock. close() (or
    the end of the with block) releases it; so does the process's end,
    however it ends."""

    _free = lib.ct_output_lock_free
    _what = "OutputLock"
    __slots__ = ("_handle", "output_dir")

    def __init__(self, output_dir):
        handle = Handle()
        check(lib.ct_output_lock_create(os.fsencode(output_dir), ctypes.byref(handle)))
        self._handle = handle
        self.output_dir = output_dir

    def __reduce__(self):
        raise TypeError("an OutputLock cannot be pickled")
