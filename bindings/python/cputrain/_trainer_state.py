"""TrainerState: a run's trainer_state.json read back by the library
(ct_trainer_state_*), as Transformers' TrainerState.load_from_json."""

import ctypes
import os

from ._errors import check
from ._lib import Handle, lib

# The numbers at the top of the file that Transformers' TrainerState holds.
_FIELDS = ("epoch", "global_step", "max_steps", "logging_steps", "eval_steps", "save_steps",
           "train_batch_size", "num_train_epochs", "num_input_tokens_seen", "total_flos",
           "best_metric", "best_global_step")
_INTEGERS = {"global_step", "max_steps", "logging_steps", "eval_steps", "save_steps",
             "train_batch_size", "num_train_epochs", "num_input_tokens_seen",
             "best_global_step"}
_NOT_FOUND = 7  # CT_ERR_NOT_FOUND

# ct_trainer_state_log_key as a pointer: a key may hold NUL bytes, which
# the declared C string would cut (its length comes back beside it).
_log_key = ctypes.CFUNCTYPE(ctypes.c_void_p, Handle, ctypes.c_size_t, ctypes.c_size_t,
                            ctypes.POINTER(ctypes.c_size_t))(("ct_trainer_state_log_key", lib))


class TrainerState:
    """What a run wrote to trainer_state.json:

        state = cputrain.TrainerState.load("out")   # or out/checkpoint-500
        [e["loss"] for e in state.log_history if "loss" in e]

    log_history is a list of dicts of floats (a key written twice counts
    once, with its last value, as with Python's json); the top-level numbers
    are attributes (global_step, epoch, best_metric, ...), None when the
    file has none. A malformed file raises CputrainError naming the file
    and the field."""

    __slots__ = ("path", "log_history") + _FIELDS

    @classmethod
    def load(cls, path):
        handle = Handle()
        check(lib.ct_trainer_state_load(os.fsencode(path), ctypes.byref(handle)))
        try:
            self = cls.__new__(cls)
            self.path = os.fspath(path)
            for name in _FIELDS:
                setattr(self, name, _number(handle, name))
            self.log_history = [_entry(handle, i)
                                for i in range(lib.ct_trainer_state_log_count(handle))]
            return self
        finally:
            lib.ct_trainer_state_free(handle)

    def __repr__(self):
        return "TrainerState(%r: global_step %r, %d log entries)" % (
            self.path, self.global_step, len(self.log_history))


def _number(handle, name):
    value = ctypes.c_double()
    status = lib.ct_trainer_state_get_number(handle, name.encode(), ctypes.byref(value))
    if status == _NOT_FOUND:
        return None
    check(status)
    if name in _INTEGERS and value.value.is_integer():
        return int(value.value)
    return value.value


def _entry(handle, i):
    entry = {}
    value = ctypes.c_double()
    length = ctypes.c_size_t()
    for k in range(lib.ct_trainer_state_log_key_count(handle, i)):
        key = _log_key(handle, i, k, ctypes.byref(length))
        check(lib.ct_trainer_state_log_value(handle, i, k, ctypes.byref(value)))
        number = value.value
        name = ctypes.string_at(key, length.value).decode("utf-8")
        entry[name] = int(number) if name == "step" and number.is_integer() else number
    return entry
