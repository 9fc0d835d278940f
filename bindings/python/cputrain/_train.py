"""Optimizer, Dataset and Trainer: AdamW with Transformers' schedules over a
ct_optim, in-memory datasets of tokenised examples over a ct_dataset, and
Hugging Face Trainer's loop over a ct_trainer, with progress and evaluation
callbacks written in Python."""

import ctypes
import enum
import itertools
import json
import numbers
import os
import weakref
from typing import NamedTuple

from ._args import TrainingArgs, _decode, _encode
from ._dist import Dist
from ._errors import CputrainError, Status, check, error_from_status
from ._handle import OwnedHandle
from ._interrupt import InterruptGuard
from ._lib import EVAL_FN, METRICS_FN, PROGRESS_FN, Handle, lib
from ._model import (Batch, Model, Task, _TASK_NAMES, _Converted, _is_float_data, _member, _np,
                     _path, _to_float32, _to_int32)
from ._tokenizer import Tokenizer

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _int64(value, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError("%s must be an int, not %s" % (what, type(value).__name__))
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise OverflowError("%s %d does not fit in a signed 64-bit integer" % (what, value))
    return int(value)


def _live_model(model, who):
    if not isinstance(model, Model):
        raise TypeError("%s needs a cputrain.Model, not %s" % (who, type(model).__name__))
    return model._live()


def _args_handle(args, who):
    if not isinstance(args, TrainingArgs):
        raise TypeError("%s needs cputrain.TrainingArgs, not %s" % (who, type(args).__name__))
    return args._live()


def _tensor_index(model, tensor):
    """A tensor index from a name or an index of `model`."""
    if isinstance(tensor, str):
        return model._index(tensor)
    if isinstance(tensor, bool) or not isinstance(tensor, numbers.Integral):
        raise TypeError("tensor must be a name or an index, not %s" % type(tensor).__name__)
    if tensor < 0:
        raise IndexError("tensor index %d is negative" % tensor)
    return int(tensor)


# ---- Optimizer ----------------------------------------------------------------

class Optimizer(OwnedHandle):
    """AdamW exactly as torch.optim.AdamW, with gradient clipping to
    max_grad_norm and the learning-rate schedule of Transformers'
    get_scheduler (a ct_optim), all configured from TrainingArgs:

        opt = Optimizer(model, TrainingArgs(learning_rate=1e-3, weight_decay=0.01,
                                            lr_scheduler_type="cosine", warmup_steps=2))
        opt.set_total_steps(100)
        model.forward_backward(...)
        grad_norm = opt.step()   # clip, AdamW, advance the schedule, zero the grads

    Weight decay applies to the tensors model.tensor_info(name).decays marks
    (not biases, not LayerNorm weights), as Trainer groups them; set_decay()
    overrides one. The model must stay open while the optimizer is used.
    The optimizer a Trainer made (Trainer.optimizer) is borrowed: it follows
    the trainer's current ct_optim and close() only lets go of it."""

    _free = lib.ct_optim_free
    _what = "Optimizer"
    __slots__ = ("_handle", "_model", "_owner", "__weakref__")

    def __init__(self, model, args):
        self._handle = None
        self._owner = None
        self._model = model
        handle = Handle()
        check(lib.ct_optim_create(_live_model(model, "Optimizer"),
                                  _args_handle(args, "Optimizer"), ctypes.byref(handle)))
        self._handle = handle

    @classmethod
    def _borrowed(cls, trainer):
        opt = object.__new__(cls)
        opt._handle = None
        opt._model = trainer._model
        opt._owner = trainer
        return opt

    def close(self):
        """Free the optimizer now (a borrowed one is only let go of)."""
        self._owner = None
        super().close()

    def __reduce__(self):
        raise TypeError("an Optimizer cannot be pickled; save() it and load() it instead")

    def _live(self):
        if self._owner is not None:
            handle = lib.ct_trainer_optim(self._owner._live())
            if not handle:
                raise ValueError("the Trainer has no optimizer yet (it makes one in train())")
            return handle
        handle = super()._live()
        if not self._model._handle:
            raise ValueError("the Model of this Optimizer was closed")
        return handle

    @property
    def model(self):
        return self._model

    def set_total_steps(self, total_steps):
        """num_training_steps of the schedule (a Trainer sets its max_steps);
        step() needs it first."""
        check(lib.ct_optim_set_total_steps(self._live(), _int64(total_steps, "total_steps")))

    def set_decay(self, tensor, decays):
        """Override whether weight decay applies to one tensor (a name or a
        model tensor index)."""
        handle = self._live()
        if not isinstance(decays, bool):
            raise TypeError("decays must be True or False, not %s" % type(decays).__name__)
        check(lib.ct_optim_set_decay(handle, _tensor_index(self._model, tensor), int(decays)))

    def step(self):
        """One optimizer step: clip to max_grad_norm, AdamW with the
        scheduled learning rate, advance the schedule, zero the gradients.
        Returns the global L2 norm of the gradients before clipping.

        A non-finite norm applies nothing (the gradients are zeroed and the
        step is not counted) and raises CputrainError with status
        ERR_NUMERIC, whose grad_norm attribute holds the norm."""
        norm = ctypes.c_double()
        status = lib.ct_optim_step(self._live(), ctypes.byref(norm))
        if status != 0:
            error = error_from_status(status)
            error.grad_norm = norm.value if status == Status.ERR_NUMERIC else None
            raise error
        return norm.value

    def grad_norm(self):
        """Global L2 norm of the current gradients; changes nothing."""
        norm = ctypes.c_double()
        check(lib.ct_optim_grad_norm(self._live(), ctypes.byref(norm)))
        return norm.value

    @property
    def step_count(self):
        """Optimizer steps taken."""
        return lib.ct_optim_get_step(self._live())

    @property
    def lr(self):
        """The learning rate the next step will use (Transformers'
        get_last_lr() after step_count scheduler steps)."""
        return lib.ct_optim_get_lr(self._live())

    def memory_bytes(self, category="optimizer_moments"):
        """Bytes of the optimizer's state: "optimizer_moments" (AdamW's two
        fp32 moments)."""
        out = ctypes.c_size_t()
        check(lib.ct_optim_memory_bytes(self._live(), _encode(category), ctypes.byref(out)))
        return out.value

    def lr_at(self, step):
        """The schedule's learning rate at optimizer step `step`."""
        return lib.ct_optim_lr_at(self._live(), _int64(step, "step"))

    def save(self, path):
        """Moments, step and schedule as one safetensors file, written atomically."""
        check(lib.ct_optim_save(self._live(), _path(path, "path")))

    def load(self, path):
        """State saved by save() for a model of the same tensor names and
        shapes; nothing changes on failure."""
        check(lib.ct_optim_load(self._live(), _path(path, "path")))

    def __repr__(self):
        try:
            handle = self._live()
        except ValueError:
            return "<closed Optimizer>"
        return "<Optimizer AdamW, step %d, lr %g%s>" % (
            lib.ct_optim_get_step(handle), lib.ct_optim_get_lr(handle),
            ", of a Trainer" if self._owner is not None else "")


# ---- Dataset ------------------------------------------------------------------

def _address(converted):
    return ctypes.cast(converted.pointer, ctypes.c_void_p).value


def _row(address, index, width):
    return ctypes.cast(address + 4 * index * width, ctypes.POINTER(ctypes.c_int32))


class Dataset(OwnedHandle):
    """Tokenised examples of one task, each seq_len tokens long, held by the
    library (a ct_dataset) for a Trainer:

        ds = Dataset("question-answering", seq_len=384)
        ds.add(input_ids, (start, end), token_type_ids, attention_mask)
        ds = Dataset.from_arrays("sequence-classification", ids, labels)   # [N, T], [N]

    Labels per example: question answering (start, end); sequence
    classification a class id; masked LM seq_len token ids (-100 = not
    predicted). token_type_ids None means all 0, attention_mask None all 1.
    The library copies what it is given."""

    _free = lib.ct_dataset_free
    _what = "Dataset"
    __slots__ = ("_handle", "_task", "__weakref__")

    def __init__(self, task, seq_len):
        self._handle = None
        self._task = _member(Task, _TASK_NAMES, task, "task")
        if isinstance(seq_len, bool) or not isinstance(seq_len, numbers.Integral):
            raise TypeError("seq_len must be an int, not %s" % type(seq_len).__name__)
        if not 1 <= seq_len <= (1 << 30):
            raise ValueError("seq_len must be positive, not %d" % seq_len)
        handle = Handle()
        check(lib.ct_dataset_create(self._task, int(seq_len), ctypes.byref(handle)))
        self._handle = handle

    @classmethod
    def from_dict(cls, task, data):
        """A dataset from columns as a tokenizer call gives them, with the
        labels: {"input_ids", "attention_mask", "token_type_ids",
        "labels" (or "label"; question answering: "start_positions" and
        "end_positions")}, as datasets.Dataset.from_dict takes them. Labels
        may be class ids, regression targets or multi-hot rows."""
        if not hasattr(data, "keys"):
            raise TypeError("data must be a dict of columns, not %s" % type(data).__name__)
        known = {"input_ids", "attention_mask", "token_type_ids", "labels", "label",
                 "start_positions", "end_positions"}
        unknown = set(data) - known
        if unknown:
            raise ValueError("unknown columns %s (from_dict takes %s)"
                             % (sorted(unknown), sorted(known)))
        if "start_positions" in data or "end_positions" in data:
            labels = [[s, e] for s, e in zip(data["start_positions"], data["end_positions"])]
        else:
            labels = data.get("labels", data.get("label"))
        if labels is None:
            raise ValueError("from_dict needs the labels: a \"labels\" (or \"label\") column")
        return cls.from_arrays(task, data["input_ids"], labels, data.get("token_type_ids"),
                               data.get("attention_mask"))

    @classmethod
    def from_arrays(cls, task, input_ids, labels, token_type_ids=None, attention_mask=None):
        """A dataset of input_ids [N, seq_len] (and the same shapes for
        token_type_ids and attention_mask) with labels [N, 2] (question
        answering), [N] (classification) or [N, seq_len] (masked LM)."""
        ids = _to_int32(input_ids, "input_ids")
        if len(ids.shape) != 2 or 0 in ids.shape:
            raise ValueError("input_ids must be 2-D [examples, seq_len], not shape %s"
                             % (ids.shape,))
        dataset = cls(task, ids.shape[1])
        try:
            dataset._add(ids, labels, token_type_ids, attention_mask, one=False)
        except BaseException:
            dataset.close()
            raise
        return dataset

    def __reduce__(self):
        raise TypeError("a Dataset cannot be pickled")

    @property
    def task(self):
        return self._task

    @property
    def seq_len(self):
        return lib.ct_dataset_seq_len(self._live())

    def __len__(self):
        return lib.ct_dataset_size(self._live())

    @property
    def labels_per_example(self):
        """2 (start, end), 1 (a class id), seq_len (masked LM, token
        classification), or as many real labels as the first example had."""
        return lib.ct_dataset_labels_per_example(self._live())

    def add(self, input_ids, labels, token_type_ids=None, attention_mask=None):
        """Append one example: seq_len token ids and its labels ((start,
        end), a class id, or seq_len token ids or class ids)."""
        if isinstance(labels, numbers.Integral) and not isinstance(labels, bool):
            labels = [labels]
        self._add(input_ids, labels, token_type_ids, attention_mask, one=True)

    def extend(self, input_ids, labels, token_type_ids=None, attention_mask=None):
        """Append N examples at once: input_ids [N, seq_len] (numpy arrays,
        nested lists or flat int32 buffers) and labels as from_arrays()
        takes them. Shapes are checked before anything is added."""
        self._add(input_ids, labels, token_type_ids, attention_mask, one=False)

    def _add(self, input_ids, labels, token_type_ids, attention_mask, one):
        # The C call reads seq_len values (and the task's label count) from
        # each pointer blindly, so every size is checked here first.
        handle = self._live()
        T, per = self.seq_len, self.labels_per_example
        ids = input_ids if isinstance(input_ids, _Converted) else _to_int32(input_ids, "input_ids")
        if one:
            if ids.size != T or len(ids.shape) > 2 or (len(ids.shape) == 2 and ids.shape[0] != 1):
                raise ValueError("input_ids has shape %s; add() takes one example of %d tokens "
                                 "(extend() takes many)" % (ids.shape, T))
        elif len(ids.shape) > 2 or ids.size % T or (len(ids.shape) == 2 and ids.shape[1] != T):
            raise ValueError("input_ids has shape %s; the dataset's examples are %d tokens"
                             % (ids.shape, T))
        n = ids.size // T
        extra = []
        for value, what in ((token_type_ids, "token_type_ids"), (attention_mask, "attention_mask")):
            if value is None:
                extra.append(None)
                continue
            c = _to_int32(value, what)
            if c.size != n * T or len(c.shape) > 2 or (len(c.shape) == 2 and c.shape[1] != T):
                raise ValueError("%s has shape %s but input_ids has %d example%s of %d tokens"
                                 % (what, c.shape, n, "" if n == 1 else "s", T))
            extra.append(c)
        real = self._task == Task.SEQUENCE_CLASSIFICATION and (
            _is_float_data(labels) or self.has_float_labels)
        if real:
            # regression targets or multi-hot rows; the first example sets how many
            lab = _to_float32(labels, "labels")
            if len(self) == 0 and lab.size and lab.size % n == 0:
                per = lab.size // n
        else:
            lab = _to_int32(labels, "labels")
        if lab.size != n * per or len(lab.shape) > 2 or (len(lab.shape) == 2 and lab.shape[1] != per):
            raise ValueError("labels has shape %s; %d %s example%s need%s %d label%s each (%s)"
                             % (lab.shape, n, self._task.name.lower(), "" if n == 1 else "s",
                                "s" if n == 1 else "", per, "" if per == 1 else "s",
                                _LABELS_HINT[self._task]))
        base = _address(ids)
        bases = [None if c is None else _address(c) for c in extra]
        lab_base = _address(lab)
        add = lib.ct_dataset_add_float if real else lib.ct_dataset_add
        for i in range(n):
            row = _row(lab_base, i, per)
            check(add(handle, _row(base, i, T),
                      None if bases[0] is None else _row(bases[0], i, T),
                      None if bases[1] is None else _row(bases[1], i, T),
                      ctypes.cast(row, ctypes.POINTER(ctypes.c_float)) if real else row, per))
        # ids, extra and lab own the memory the addresses point into; they
        # must live until here (the names keep them).
        del ids, extra, lab

    def lengths(self, start=0, stop=None):
        """The real tokens (attention mask's ones) of examples [start, stop),
        as group_by_length sorts them: an int32 numpy array (without numpy,
        a list)."""
        handle = self._live()
        size = len(self)
        start = _int64(start, "start")
        stop = size if stop is None else _int64(stop, "stop")
        if not 0 <= start <= stop <= size:
            raise IndexError("lengths(%d, %d) outside the dataset's %d examples"
                             % (start, stop, size))
        count = stop - start
        out = (ctypes.c_int32 * max(count, 1))()
        check(lib.ct_dataset_get_lengths(handle, start, count, out))
        if _np is not None:
            return _np.frombuffer(out, dtype=_np.int32, count=count).copy()
        return list(out)[:count]

    @property
    def has_float_labels(self):
        """True for real-valued labels (regression targets, multi-hot rows)."""
        return bool(lib.ct_dataset_has_float_labels(self._live()))

    def labels(self, start=0, stop=None):
        """Labels of examples [start, stop) as they were added: question
        answering [n, 2] (start, end), classification [n] (real-valued:
        [n] or [n, num_labels], float32), masked LM and token
        classification [n, seq_len]. An int32 numpy array (without numpy, a
        memoryview of that shape)."""
        handle = self._live()
        size = len(self)
        start = _int64(start, "start")
        stop = size if stop is None else _int64(stop, "stop")
        if not 0 <= start <= stop <= size:
            raise IndexError("labels(%d, %d) outside the dataset's %d examples"
                             % (start, stop, size))
        per = lib.ct_dataset_labels_per_example(handle)
        count = stop - start
        real = self.has_float_labels
        ctype, code = (ctypes.c_float, "f") if real else (ctypes.c_int32, "i")
        out = (ctype * max(count * per, 1))()
        get = lib.ct_dataset_get_float_labels if real else lib.ct_dataset_get_labels
        check(get(handle, start, count, out))
        dims = (count,) if per == 1 and self._task == Task.SEQUENCE_CLASSIFICATION \
            else (count, per)
        if _np is not None:
            return _np.frombuffer(out, dtype=_np.float32 if real else _np.int32,
                                  count=count * per).reshape(dims)
        if count * per == 0:  # memoryview cannot take a shape with a 0 in it
            return memoryview(b"").cast(code)
        return memoryview(out).cast("B")[:4 * count * per].cast(code, list(dims))

    def batch(self, indices, batch=None):
        """Examples `indices` as a Batch (inputs and labels), filled by the
        library; into `batch` when given."""
        handle = self._live()
        idx = [_int64(i, "index") for i in indices]
        if not idx:
            raise ValueError("batch() needs at least one index")
        n = len(self)
        for i in idx:
            if not 0 <= i < n:
                raise IndexError("index %d outside the dataset's %d examples" % (i, n))
        array = (ctypes.c_int64 * len(idx))(*idx)
        owned = batch is None
        if owned:
            batch = Batch()
        try:
            check(lib.ct_dataset_fill_batch(handle, array, len(idx), batch._live()))
        except BaseException:
            if owned:
                batch.close()
            raise
        batch._has_labels = True
        return batch

    def __repr__(self):
        if not self._handle:
            return "<closed Dataset>"
        return "<Dataset %s, %d examples of %d tokens>" % (
            self._task.name.lower(), len(self), self.seq_len)


_LABELS_HINT = {
    Task.QUESTION_ANSWERING: "start and end positions",
    Task.SEQUENCE_CLASSIFICATION: "a class id, or real values: one regression target or "
                                  "num_labels multi-label values",
    Task.MASKED_LM: "token ids, -100 where not predicted",
    Task.TOKEN_CLASSIFICATION: "class ids per token, -100 where not scored",
}


# ---- Trainer ------------------------------------------------------------------

class Event(enum.IntEnum):
    """ct_event: what a progress callback is told about."""
    TRAIN_BEGIN = 0
    STEP_END = 1    # after each optimizer step
    LOG = 2         # a log entry was added (log holds it)
    EVALUATE = 3    # after an evaluation (log holds the metrics)
    SAVE = 4        # a checkpoint was written (log: {"checkpoint": path})
    EPOCH_END = 5
    TRAIN_END = 6


class TrainOutput(NamedTuple):
    """What Trainer.train() returns, as Transformers' TrainOutput."""
    global_step: int
    training_loss: float
    metrics: dict


# The library's own terminal progress bar (ct_progress_to_terminal), usable
# as Trainer(progress=PROGRESS_TO_TERMINAL): no Python runs per event.
PROGRESS_TO_TERMINAL = PROGRESS_FN(("ct_progress_to_terminal", lib))
_NO_PROGRESS = PROGRESS_FN()
_NO_EVAL = EVAL_FN()

# user pointer -> Trainer. The trampolines below are the only C-callable
# objects handed to the library for Python callbacks; they live as long as
# this module, so the library never calls a collected CFUNCTYPE.
_trainers = weakref.WeakValueDictionary()
_keys = itertools.count(1)


def _parse_log(event, text):
    if text is None:
        return None
    text = _decode(text)
    try:
        return json.loads(text)
    except ValueError:
        # The library writes a SAVE event's path into its JSON unescaped, so
        # a path with '"' or '\' is not valid JSON; take the path as written.
        head, tail = '{"checkpoint": "', '"}'
        if event == Event.SAVE and text.startswith(head) and text.endswith(tail):
            return {"checkpoint": text[len(head):-len(tail)]}
        raise


@PROGRESS_FN
def _progress_trampoline(user, event, step, max_steps, epoch, log_json):
    # Nothing may propagate into C: an exception is kept, training stops,
    # and train() raises it once ct_trainer_train has returned.
    trainer = None
    try:
        trainer = _trainers.get(user)
        if trainer is None:
            return 0
        if trainer._forward_interrupts() or trainer._pending is not None:
            return 1
        progress = trainer._progress
        if progress is PROGRESS_TO_TERMINAL:
            # installed here only while train() watches for Ctrl-C
            stop = PROGRESS_TO_TERMINAL(trainer._args._live(), event, step, max_steps, epoch,
                                        log_json)
        elif callable(progress):
            try:
                event = Event(event)
            except ValueError:
                pass  # an event newer than this package: passed on as a number
            stop = progress(event, step, max_steps, epoch, _parse_log(event, log_json))
        else:
            stop = 0
        return 1 if stop or trainer._forward_interrupts() else 0
    except BaseException as e:  # noqa: B902 -- KeyboardInterrupt too: it is re-raised
        try:
            trainer._pending = e
        except BaseException:
            pass
        return 1


@EVAL_FN
def _eval_trampoline(user, handle):
    try:
        trainer = _trainers.get(user)
        if trainer is None or trainer._evaluate is None:
            return 0
        status = trainer._run_evaluation()
        trainer._forward_interrupts()  # an evaluation can be long: cancel after it
        return status
    except BaseException as e:  # noqa: B902
        try:
            trainer._pending = e
        except BaseException:
            pass
        return int(Status.ERR_CANCELLED)


class EvalPrediction(NamedTuple):
    """What compute_metrics receives, as Transformers' EvalPrediction:
    predictions are the logits of every evaluation example (numpy when it
    is installed, else a flat memoryview), label_ids their labels ([n] or
    [n, labels per example])."""
    predictions: object
    label_ids: object


class EarlyStoppingCallback:
    """Transformers' EarlyStoppingCallback, for Trainer(callbacks=[...]):
    training ends when metric_for_best_model has not improved on its best
    by more than early_stopping_threshold for early_stopping_patience
    evaluations (needs load_best_model_at_end, metric_for_best_model and an
    eval_strategy)."""

    def __init__(self, early_stopping_patience=1, early_stopping_threshold=0.0):
        if isinstance(early_stopping_patience, bool) or \
                not isinstance(early_stopping_patience, numbers.Integral):
            raise TypeError("early_stopping_patience must be an int")
        if early_stopping_patience < 1:
            raise ValueError("early_stopping_patience must be 1 or more, not %d"
                             % early_stopping_patience)
        self.early_stopping_patience = int(early_stopping_patience)
        self.early_stopping_threshold = float(early_stopping_threshold)


class DataCollatorForLanguageModeling:
    """Masked-LM masking, as Transformers' collator of that name, for
    Trainer(data_collator=...): the library draws the masks at batch time
    (15% of the tokens by default; 80% [MASK], 10% random, 10% kept), the
    same whatever the world size or a resume. `tokenizer` gives [MASK] and
    is saved with the model (as Trainer's processing_class)."""

    whole_word = False

    def __init__(self, tokenizer, mlm=True, mlm_probability=0.15):
        if not mlm:
            raise ValueError("mlm=False (causal language modelling) is not offered: BERT "
                             "models are trained masked")
        if not isinstance(tokenizer, Tokenizer):
            raise TypeError("tokenizer must be a cputrain.Tokenizer, not %s"
                            % type(tokenizer).__name__)
        self.tokenizer = tokenizer
        self.mlm_probability = float(mlm_probability)


class DataCollatorForWholeWordMask(DataCollatorForLanguageModeling):
    """The same, choosing whole words ("##" pieces with their word)."""

    whole_word = True


def _as_array(pointer, shape, dtype, ctype):
    """A copy of C data as a numpy array of `shape` (a memoryview without numpy)."""
    n = 1
    for d in shape:
        n *= d
    block = (ctype * n).from_address(ctypes.addressof(pointer.contents)) if n else (ctype * 0)()
    if _np is None:
        return memoryview(bytearray(block)).cast("f" if ctype is ctypes.c_float else "i")
    return _np.ctypeslib.as_array(block).astype(dtype, copy=True).reshape(shape)


@METRICS_FN
def _metrics_trampoline(user, handle, logits, ndim, shape, labels, float_labels, n_labels):
    trainer = _trainers.get(user)
    if trainer is None or trainer._compute_metrics is None:
        return 0
    trainer._in_eval = True
    try:
        logit_dims = tuple(shape[i] for i in range(ndim))
        n = logit_dims[0] if logit_dims else 0
        per = n_labels // n if n else 1
        label_dims = (n,) if per == 1 else (n, per)
        predictions = _as_array(logits, logit_dims, "float32", ctypes.c_float)
        label_ids = (_as_array(labels, label_dims, "int64", ctypes.c_int32) if labels
                     else _as_array(float_labels, label_dims, "float32", ctypes.c_float))
        result = trainer._compute_metrics(EvalPrediction(predictions, label_ids))
        if not hasattr(result, "items"):
            raise TypeError("compute_metrics returned %s; return a dict of metrics"
                            % type(result).__name__)
        for name, value in result.items():
            trainer.report_metric(name, value)
        return 0
    except CputrainError as e:
        trainer._pending = e
        return int(e.status) or int(Status.ERR_CANCELLED)
    except BaseException as e:  # noqa: B902
        trainer._pending = e
        return int(Status.ERR_CANCELLED)
    finally:
        trainer._in_eval = False


_NO_METRICS = METRICS_FN()


class Trainer(OwnedHandle):
    """Hugging Face Trainer's loop in the library (a ct_trainer):

        trainer = Trainer(model, args, train_dataset=ds, progress=show)
        out = trainer.train()                 # TrainOutput(global_step, training_loss, metrics)
        trainer.log_history                   # as trainer_state.json's log_history

    progress(event, step, max_steps, epoch, log) is called on every Event
    (log is the log entry as a dict, or None) and returns something true to
    stop training, which then raises CputrainError with status
    ERR_CANCELLED. PROGRESS_TO_TERMINAL draws the library's own bar.

    At eval_strategy points, with eval_dataset the library computes
    eval_loss over it and calls compute_metrics(EvalPrediction) with every
    example's logits and labels; the dict it returns is logged with
    Trainer's "eval_" prefix. evaluate(trainer), when given too, runs after
    and reports metrics with trainer.report_metric(name, value) (or
    returns a dict of them); it may call trainer.evaluate_loss(dataset).
    callbacks takes EarlyStoppingCallback.

    An exception raised by a callback does not cross into the library:
    training stops at once and train() raises that exception.

    Ctrl-C (SIGINT) during train() in the main thread stops training at the
    next optimizer step and saves a checkpoint to resume from; train() then
    raises KeyboardInterrupt saying where. A second Ctrl-C stops at once
    without waiting for that save. The SIGINT handler in place before is
    put back when train() returns.

    The Model must stay open while the trainer exists; the trainer keeps the
    model, its own copy of the arguments and the datasets referenced."""

    _free = lib.ct_trainer_free
    _what = "Trainer"
    __slots__ = ("_handle", "_model", "_args", "_train_dataset", "_progress", "_evaluate",
                 "_dist", "_key", "_pending", "_running", "_in_eval", "_tokenizer",
                 "_interrupts", "_cancel_sent", "_eval_dataset", "_compute_metrics",
                 "_early_stopping", "_collator", "__weakref__")

    def __init__(self, model, args, train_dataset=None, progress=None, evaluate=None,
                 dist=None, tokenizer=None, eval_dataset=None, compute_metrics=None,
                 callbacks=None, data_collator=None):
        self._handle = None
        self._dist = None
        self._tokenizer = None
        self._model = model
        self._args = None
        self._train_dataset = None
        self._progress = None
        self._evaluate = None
        self._eval_dataset = None
        self._compute_metrics = None
        self._early_stopping = None
        self._collator = None
        self._pending = None
        self._running = False
        self._in_eval = False
        self._interrupts = 0
        self._cancel_sent = 0
        _live_model(model, "Trainer")
        _args_handle(args, "Trainer")
        self._key = next(_keys)
        # A copy of our own: the terminal callback reads it while training,
        # and a later change to the caller's object must not matter.
        self._args = args.copy()
        try:
            self._handle = self._create(self._args)
            if train_dataset is not None:
                self.train_dataset = train_dataset
            self.set_progress_callback(progress)
            self.set_eval_callback(evaluate)
            if dist is not None:
                self.dist = dist
            if tokenizer is not None:
                self.tokenizer = tokenizer
            if eval_dataset is not None:
                self.eval_dataset = eval_dataset
            self.compute_metrics = compute_metrics
            for callback in callbacks or ():
                if not isinstance(callback, EarlyStoppingCallback):
                    raise TypeError("callbacks takes EarlyStoppingCallback (progress= and "
                                    "evaluate= take functions), not %s"
                                    % type(callback).__name__)
                self._early_stopping = callback
            self._apply_early_stopping()
            self._collator = data_collator
            self._apply_collator()
        except BaseException:
            self.close()
            raise
        _trainers[self._key] = self

    def _create(self, args):
        handle = Handle()
        check(lib.ct_trainer_create(self._model._live(), args._live(), ctypes.byref(handle)))
        return handle

    # ---- lifetime -------------------------------------------------------

    def close(self):
        """Free the trainer now (not from inside one of its callbacks)."""
        if self._running:
            raise RuntimeError("a Trainer cannot be closed while it is training")
        _trainers.pop(self._key, None)
        super().close()
        if self._args is not None:
            self._args.close()

    def __reduce__(self):
        raise TypeError("a Trainer cannot be pickled")

    def _live(self):
        super()._live()
        if not self._model._handle:
            raise ValueError("the Model of this Trainer was closed")
        return self._handle

    # ---- setup ----------------------------------------------------------

    @property
    def model(self):
        return self._model

    @property
    def dist(self):
        """The Dist training runs data-parallel over (None: this process
        alone). The trainer keeps it open while it holds it."""
        return self._dist

    @dist.setter
    def dist(self, dist):
        if dist is not None and not isinstance(dist, Dist):
            raise TypeError("dist must be a cputrain.Dist or None, not %s" % type(dist).__name__)
        check(lib.ct_trainer_set_dist(self._live(), dist._live() if dist is not None else None))
        self._dist = dist

    @property
    def tokenizer(self):
        """The Tokenizer saved beside the model and in every checkpoint
        (its vocab.txt, tokenizer_config.json, special_tokens_map.json and
        tokenizer.json), as Trainer saves its processing_class; None for
        none. The trainer keeps it open while it holds it."""
        return self._tokenizer

    @tokenizer.setter
    def tokenizer(self, tokenizer):
        if tokenizer is not None and not isinstance(tokenizer, Tokenizer):
            raise TypeError("tokenizer must be a cputrain.Tokenizer or None, not %s"
                            % type(tokenizer).__name__)
        check(lib.ct_trainer_set_tokenizer(self._live(),
                                           tokenizer._live() if tokenizer is not None else None))
        self._tokenizer = tokenizer

    @property
    def args(self):
        """A copy of the arguments the trainer runs with."""
        self._live()
        return self._args.copy()

    @property
    def train_dataset(self):
        return self._train_dataset

    @train_dataset.setter
    def train_dataset(self, dataset):
        if not isinstance(dataset, Dataset):
            raise TypeError("train_dataset must be a cputrain.Dataset, not %s"
                            % type(dataset).__name__)
        check(lib.ct_trainer_set_train_dataset(self._live(), dataset._live()))
        self._train_dataset = dataset

    @property
    def eval_dataset(self):
        return self._eval_dataset

    @eval_dataset.setter
    def eval_dataset(self, dataset):
        if dataset is not None and not isinstance(dataset, Dataset):
            raise TypeError("eval_dataset must be a cputrain.Dataset or None, not %s"
                            % type(dataset).__name__)
        check(lib.ct_trainer_set_eval_dataset(self._live(),
                                              dataset._live() if dataset is not None else None))
        self._eval_dataset = dataset

    @property
    def compute_metrics(self):
        return self._compute_metrics

    @compute_metrics.setter
    def compute_metrics(self, fn):
        """fn(EvalPrediction) -> dict of metrics; None for none."""
        if fn is not None and not callable(fn):
            raise TypeError("compute_metrics must be callable or None, not %s"
                            % type(fn).__name__)
        check(lib.ct_trainer_set_metrics_callback(
            self._live(), _metrics_trampoline if fn is not None else _NO_METRICS,
            self._key if fn is not None else None))
        self._compute_metrics = fn

    def _apply_collator(self):
        c = self._collator
        if c is None:
            check(lib.ct_trainer_set_mlm_masking(self._live(), 0.0, 0))
            return
        if not isinstance(c, DataCollatorForLanguageModeling):
            raise TypeError("data_collator takes DataCollatorForLanguageModeling or "
                            "DataCollatorForWholeWordMask (batches are made in the library), "
                            "not %s" % type(c).__name__)
        if self._tokenizer is None:
            self.tokenizer = c.tokenizer
        check(lib.ct_trainer_set_mlm_masking(self._live(), c.mlm_probability, int(c.whole_word)))

    def _apply_early_stopping(self):
        e = self._early_stopping
        check(lib.ct_trainer_set_early_stopping(
            self._live(), e.early_stopping_patience if e else 0,
            e.early_stopping_threshold if e else 0.0))

    def set_progress_callback(self, progress):
        """progress(event, step, max_steps, epoch, log) -> stop?; None for
        none; PROGRESS_TO_TERMINAL for the library's terminal bar."""
        handle = self._live()
        if progress is None:
            check(lib.ct_trainer_set_progress_callback(handle, _NO_PROGRESS, None))
        elif progress is PROGRESS_TO_TERMINAL:
            check(lib.ct_trainer_set_progress_to_terminal(handle))
        elif callable(progress):
            check(lib.ct_trainer_set_progress_callback(handle, _progress_trampoline, self._key))
        else:
            raise TypeError("progress must be callable, PROGRESS_TO_TERMINAL or None, not %s"
                            % type(progress).__name__)
        self._progress = progress

    def set_eval_callback(self, evaluate):
        """evaluate(trainer) at eval_strategy points; None for none."""
        handle = self._live()
        if evaluate is None:
            check(lib.ct_trainer_set_eval_callback(handle, _NO_EVAL, None))
        elif callable(evaluate):
            check(lib.ct_trainer_set_eval_callback(handle, _eval_trampoline, self._key))
        else:
            raise TypeError("evaluate must be callable or None, not %s" % type(evaluate).__name__)
        self._evaluate = evaluate

    # ---- running ----------------------------------------------------------

    def train(self, resume_from_checkpoint=None):
        """Run training (resuming when resume_from_checkpoint, here or in
        the arguments, says so: True for the newest complete checkpoint of
        output_dir, or a checkpoint folder), then save the model,
        train_results.json and trainer_state.json into output_dir.
        Afterwards the model is in training mode, as after Trainer.train()."""
        if self._running:
            raise RuntimeError("train() called from inside this Trainer's own callback")
        self._live()
        if self._train_dataset is not None:
            self._train_dataset._live()
        if resume_from_checkpoint is not None and resume_from_checkpoint is not False:
            self._rebuild(resume_from_checkpoint)
        handle = self._live()
        if self._tokenizer is not None:  # still open, and given to a rebuilt handle too
            check(lib.ct_trainer_set_tokenizer(handle, self._tokenizer._live()))
        self._pending = None
        self._interrupts = self._cancel_sent = 0
        guard = InterruptGuard(self)
        error = None
        own_bar = False
        try:
            own_bar = self._progress is None or self._progress is PROGRESS_TO_TERMINAL
            if guard.install() and own_bar:
                # the trampoline is where an interrupt becomes a cancel
                check(lib.ct_trainer_set_progress_callback(handle, _progress_trampoline,
                                                           self._key))
            self._running = True
            status = lib.ct_trainer_train(handle)
            if status != 0:
                error = error_from_status(status)  # before any other library call
        finally:
            self._running = False
            restore = guard.active and own_bar
            guard.restore()
            if restore and self._handle:
                self.set_progress_callback(self._progress)
            if self._model._handle:
                lib.ct_model_set_training(self._model._handle, 1)
                self._model._training = True
        pending, self._pending = self._pending, None
        if pending is not None:
            raise pending
        if self._interrupts:
            if error is not None and error.status == Status.ERR_CANCELLED:
                raise KeyboardInterrupt(error.message) from error
            if error is not None:
                raise error
            raise KeyboardInterrupt("interrupted as training ended: the run is complete and "
                                    "saved in output_dir")
        if error is not None:
            raise error
        metrics = {}
        for entry in reversed(self.log_history):
            if "train_runtime" in entry:
                metrics = {k: v for k, v in entry.items() if k != "step"}
                break
        return TrainOutput(self.global_step, self.train_loss, metrics)

    def cancel(self):
        """Ask train() to stop at the next optimizer step and save a
        checkpoint to resume from; train() then raises CputrainError with
        status ERR_CANCELLED naming the step and the checkpoint. Safe from
        any thread and from the trainer's callbacks (it only sets a flag in
        the library). A request before train() stops it before its first
        step; train() clears it when it returns."""
        lib.ct_trainer_cancel(self._live())

    def _forward_interrupts(self):
        """From a trampoline: pass interrupts counted by the SIGINT handler
        on to the library. True when training must stop at once."""
        if self._interrupts and not self._cancel_sent:
            self._cancel_sent = 1
            lib.ct_trainer_cancel(self._handle)
        return self._interrupts >= 2

    def _rebuild(self, resume):
        """A new ct_trainer whose arguments say where to resume from (the
        C trainer copies its arguments when created)."""
        if resume is True:
            value = "true"
        elif isinstance(resume, (str, bytes, os.PathLike)):
            value = os.fsdecode(resume)
        else:
            raise TypeError("resume_from_checkpoint must be True, False, None or a path, not %s"
                            % type(resume).__name__)
        args = self._args.copy()
        try:
            args.resume_from_checkpoint = value
            handle = self._create(args)
        except BaseException:
            args.close()
            raise
        old, self._handle = self._handle, handle
        old_args, self._args = self._args, args
        try:
            if self._train_dataset is not None:
                check(lib.ct_trainer_set_train_dataset(handle, self._train_dataset._live()))
            self.set_progress_callback(self._progress)
            self.set_eval_callback(self._evaluate)
            if self._eval_dataset is not None:
                self.eval_dataset = self._eval_dataset
            self.compute_metrics = self._compute_metrics
            self._apply_early_stopping()
            self._apply_collator()
        except BaseException:
            self._handle, self._args = old, old_args
            lib.ct_trainer_free(handle)
            args.close()
            raise
        lib.ct_trainer_free(old)
        old_args.close()

    def _run_evaluation(self):
        self._in_eval = True
        model, was = self._model, self._model._training
        # the library runs the callback in eval mode (no dropout)
        model._training = bool(lib.ct_model_get_training(model._handle))
        try:
            result = self._evaluate(self)
            if result is not None:
                if not hasattr(result, "items"):
                    raise TypeError("the evaluation callback returned %s; return None or a "
                                    "dict of metrics" % type(result).__name__)
                for name, value in result.items():
                    self.report_metric(name, value)
            return 0
        except CputrainError as e:
            self._pending = e
            return int(e.status) or int(Status.ERR_CANCELLED)
        except BaseException as e:  # noqa: B902
            self._pending = e
            return int(Status.ERR_CANCELLED)
        finally:
            self._in_eval = False
            model._training = was  # as the library puts it back

    def report_metric(self, name, value):
        """From the evaluation callback: add "name": value to the
        evaluation's log entry (pass the full name, e.g. "eval_f1"; from
        compute_metrics, names without "eval_" get it)."""
        handle = self._live()
        if not self._in_eval:
            raise RuntimeError("report_metric() belongs inside the evaluation callback; "
                               "elsewhere the metric would be lost")
        if not isinstance(name, str):
            raise TypeError("metric name must be a str, not %s" % type(name).__name__)
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError("metric %s must be a number, not %s" % (name, type(value).__name__))
        check(lib.ct_trainer_report_metric(handle, _encode(name), float(value)))

    def evaluate_loss(self, dataset):
        """Mean loss of the model on `dataset` (eval mode, no dropout,
        per_device_eval_batch_size examples at a time)."""
        if not isinstance(dataset, Dataset):
            raise TypeError("evaluate_loss needs a cputrain.Dataset, not %s"
                            % type(dataset).__name__)
        handle = self._live()
        if dataset.task != self._model.task:
            # The library would only say the batch lacks the head's labels.
            raise ValueError("evaluate_loss: the dataset is for %s, the model is %s"
                             % (dataset.task.name.lower(), self._model.architecture))
        loss = ctypes.c_double()
        check(lib.ct_trainer_evaluate_loss(handle, dataset._live(), ctypes.byref(loss)))
        return loss.value

    def evaluate_accuracy(self, dataset):
        """(loss, accuracy) of the model on `dataset` from one pass: the
        fraction of labelled positions whose argmax logit is the label (a
        masked LM's masked tokens, as run_mlm.py's compute_metrics scores
        them; token or sequence classification's labels)."""
        if not isinstance(dataset, Dataset):
            raise TypeError("evaluate_accuracy needs a cputrain.Dataset, not %s"
                            % type(dataset).__name__)
        handle = self._live()
        if dataset.task != self._model.task:
            raise ValueError("evaluate_accuracy: the dataset is for %s, the model is %s"
                             % (dataset.task.name.lower(), self._model.architecture))
        loss, accuracy = ctypes.c_double(), ctypes.c_double()
        check(lib.ct_trainer_evaluate_accuracy(handle, dataset._live(), ctypes.byref(loss),
                                               ctypes.byref(accuracy)))
        return loss.value, accuracy.value

    def set_eval_accuracy(self, on=True):
        """Evaluations (eval_strategy) also report eval_accuracy, counted as
        evaluate_accuracy counts it, in the evaluation's own pass."""
        check(lib.ct_trainer_set_eval_accuracy(self._live(), 1 if on else 0))

    def predict(self, dataset):
        """The model's logits for every example of `dataset`, in order, as
        Trainer.predict() computes them (eval mode, no dropout; the model's
        mode is put back): question answering [N, seq_len, 2] (start, end),
        classification [N, num_labels], masked LM [N, seq_len, vocab_size].
        A float32 numpy array (without numpy, a memoryview of that shape).
        With a Dist every rank computes a block and all receive the whole.
        dataset.labels() holds what they are scored against."""
        if not isinstance(dataset, Dataset):
            raise TypeError("predict needs a cputrain.Dataset, not %s" % type(dataset).__name__)
        handle = self._live()
        if dataset.task != self._model.task:
            raise ValueError("predict: the dataset is for %s, the model is %s"
                             % (dataset.task.name.lower(), self._model.architecture))
        ndim = ctypes.c_int()
        shape = (ctypes.c_int64 * 3)()
        check(lib.ct_trainer_predict(handle, dataset._live(), None, 0, ctypes.byref(ndim), shape))
        dims = tuple(shape[i] for i in range(ndim.value))
        n = 1
        for d in dims:
            n *= d
        out = (ctypes.c_float * max(n, 1))()
        check(lib.ct_trainer_predict(handle, dataset._live(), out, n, None, None))
        if _np is not None:
            return _np.frombuffer(out, dtype=_np.float32, count=n).reshape(dims)
        if n == 0:  # memoryview cannot take a shape with a 0 in it
            return memoryview(b"").cast("f")
        return memoryview(out).cast("B")[:4 * n].cast("f", list(dims))

    # ---- state ---------------------------------------------------------------

    @property
    def global_step(self):
        return lib.ct_trainer_global_step(self._live())

    @property
    def max_steps(self):
        """Optimizer steps planned (known once train() has started)."""
        return lib.ct_trainer_max_steps(self._live())

    @property
    def train_loss(self):
        """Mean training loss over the steps run (nan before any)."""
        return lib.ct_trainer_train_loss(self._live())

    @property
    def log_history(self):
        """The log entries, as trainer_state.json's log_history (a new list
        each time)."""
        return json.loads(_decode(lib.ct_trainer_log_history(self._live())))

    @property
    def optimizer(self):
        """The trainer's optimizer (borrowed), or None before train()."""
        if not lib.ct_trainer_optim(self._live()):
            return None
        return Optimizer._borrowed(self)

    def __repr__(self):
        if not self._handle:
            return "<closed Trainer>"
        return "<Trainer %s, step %d of %d>" % (self._model.architecture if self._model._handle
                                                else "(closed model)", self.global_step,
                                                self.max_steps)
