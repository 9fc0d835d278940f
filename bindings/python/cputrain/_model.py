"""Model and Batch: BERT and DistilBERT with a task head over ct_model and
ct_batch handles. Parameters, gradients and logits are views of the
library's own buffers (numpy arrays when numpy is installed, else
memoryviews), so reading them copies nothing."""

import array
import collections.abc
import ctypes
import enum
import numbers
import os
from typing import NamedTuple, Tuple

from ._args import _decode, _encode
from ._errors import check
from ._handle import OwnedHandle
from ._lib import Handle, lib

try:
    import numpy as _np
except ImportError:  # the package works without numpy; views are memoryviews
    _np = None


class Task(enum.IntEnum):
    """ct_task: the head on top of the encoder."""
    QUESTION_ANSWERING = 0       # BertForQuestionAnswering
    SEQUENCE_CLASSIFICATION = 1  # BertForSequenceClassification
    MASKED_LM = 2                # BertForMaskedLM
    TOKEN_CLASSIFICATION = 3     # BertForTokenClassification


class Precision(enum.IntEnum):
    """ct_precision: FP32, or BF16 matrix products with fp32 accumulation."""
    FP32 = 0
    BF16 = 1


class DType(enum.IntEnum):
    """ct_dtype: element type of saved tensors."""
    F32 = 0
    BF16 = 1
    F16 = 2


# Names accepted besides the enum members, as Transformers' pipelines and
# torch spell them.
_TASK_NAMES = {
    "question-answering": Task.QUESTION_ANSWERING,
    "sequence-classification": Task.SEQUENCE_CLASSIFICATION,
    "text-classification": Task.SEQUENCE_CLASSIFICATION,
    "masked-lm": Task.MASKED_LM,
    "fill-mask": Task.MASKED_LM,
    "token-classification": Task.TOKEN_CLASSIFICATION,
    "ner": Task.TOKEN_CLASSIFICATION,
}
_PRECISION_NAMES = {"fp32": Precision.FP32, "float32": Precision.FP32,
                    "bf16": Precision.BF16, "bfloat16": Precision.BF16}
_DTYPE_NAMES = {"float32": DType.F32, "f32": DType.F32, "fp32": DType.F32,
                "bfloat16": DType.BF16, "bf16": DType.BF16,
                "float16": DType.F16, "f16": DType.F16, "fp16": DType.F16}


def _member(enum_type, names, value, what):
    """An enum member from a member, its value, or one of `names`."""
    if isinstance(value, str):
        key = value.lower().replace("_", "-") if enum_type is Task else value.lower()
        if key in names:
            return names[key]
        raise ValueError("unknown %s %r; one of %s" % (what, value, ", ".join(names)))
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError("%s must be a %s or one of %s, not %s"
                        % (what, enum_type.__name__, ", ".join(names), type(value).__name__))
    try:
        return enum_type(value)
    except ValueError:
        raise ValueError("%d is not a valid %s" % (value, what)) from None


def _uint64(value, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError("%s must be an int, not %s" % (what, type(value).__name__))
    if not 0 <= value < (1 << 64):
        raise OverflowError("%s %d does not fit in an unsigned 64-bit integer" % (what, value))
    return int(value)


def _path(path, what):
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError("%s must be a str or path, not %s" % (what, type(path).__name__))
    path = os.fspath(path)
    return _encode(path) if isinstance(path, str) else path


# ---- converting inputs --------------------------------------------------------

_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_INT_FORMATS = set("bBhHiIlLqQnN")
_FLOAT_FORMATS = set("efd")


def _format_char(fmt):
    return fmt.lstrip("@=<>!")


def _flatten(value, what):
    """A nested list/tuple as (flat list, shape); rectangular or an error."""
    if not isinstance(value, (list, tuple)):
        return [value], ()
    if not value:
        return [], (0,)
    parts = [_flatten(v, what) for v in value]
    shape = parts[0][1]
    for flat, s in parts:
        if s != shape:
            raise ValueError("%s is ragged: rows of shape %s and %s" % (what, shape, s))
    return [x for flat, _ in parts for x in flat], (len(value),) + shape


class _Converted(NamedTuple):
    pointer: object  # ctypes pointer to the first element
    shape: Tuple[int, ...]
    keep: object     # what owns the memory; keep it alive until the C call returns

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n


def _to_int32(value, what):
    """Integers (numpy array, buffer such as array('i') or bytes of native
    int32, nested lists) as a C-contiguous int32 block, copied only when the
    layout or type differs."""
    if _np is not None and not isinstance(value, (list, tuple, bytes, bytearray, memoryview,
                                                  array.array)):
        if isinstance(value, _np.ndarray) or hasattr(value, "__array__"):
            a = _np.asarray(value)
            if a.dtype.kind not in "iu" and a.dtype != _np.bool_:
                raise TypeError("%s must hold integers, not %s" % (what, a.dtype))
            if a.dtype != _np.int32 and a.size:
                lo, hi = int(a.min()), int(a.max())
                if lo < _INT32_MIN or hi > _INT32_MAX:
                    raise OverflowError("%s: value %d does not fit in int32"
                                        % (what, lo if lo < _INT32_MIN else hi))
            a = _np.ascontiguousarray(a, dtype=_np.int32)
            return _Converted(a.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), a.shape, a)
    if isinstance(value, (bytes, bytearray, memoryview, array.array)):
        view = memoryview(value)
        fmt = _format_char(view.format)
        if fmt in ("B", "b", "c") and view.itemsize == 1:
            # Raw bytes: native-endian int32 values.
            if view.nbytes % 4:
                raise ValueError("%s: %d bytes is not a whole number of int32 values"
                                 % (what, view.nbytes))
            block = (ctypes.c_int32 * (view.nbytes // 4)).from_buffer_copy(view.tobytes())
            return _Converted(block, (view.nbytes // 4,), block)
        if fmt not in _INT_FORMATS:
            raise TypeError("%s must hold integers, not buffer format %r" % (what, view.format))
        if fmt in ("i", "l") and view.itemsize == 4 and view.c_contiguous:
            block = (ctypes.c_int32 * (view.nbytes // 4)).from_buffer_copy(view.tobytes())
            return _Converted(block, tuple(view.shape), block)
        value = view.tolist()
    if isinstance(value, (list, tuple)):
        flat, shape = _flatten(value, what)
        for x in flat:
            if isinstance(x, bool) or not isinstance(x, numbers.Integral):
                raise TypeError("%s must hold integers, not %s" % (what, type(x).__name__))
            if not _INT32_MIN <= x <= _INT32_MAX:
                raise OverflowError("%s: value %d does not fit in int32" % (what, x))
        block = (ctypes.c_int32 * len(flat))(*flat)
        return _Converted(block, shape, block)
    raise TypeError("%s must be a numpy array, array('i'), bytes or a list of ints, not %s"
                    % (what, type(value).__name__))


def _to_float32(value, what):
    """Real numbers as a C-contiguous float32 block (regression targets)."""
    if _np is not None and (isinstance(value, _np.ndarray) or hasattr(value, "__array__")) \
            and not isinstance(value, (list, tuple, array.array, memoryview, bytes, bytearray)):
        a = _np.asarray(value)
        if a.dtype.kind not in "iuf":
            raise TypeError("%s must hold real numbers, not %s" % (what, a.dtype))
        a = _np.ascontiguousarray(a, dtype=_np.float32)
        return _Converted(a.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), a.shape, a)
    if isinstance(value, (bytes, bytearray, memoryview, array.array)):
        view = memoryview(value)
        fmt = _format_char(view.format)
        if fmt in ("B", "b", "c") and view.itemsize == 1:
            if view.nbytes % 4:
                raise ValueError("%s: %d bytes is not a whole number of float32 values"
                                 % (what, view.nbytes))
            block = (ctypes.c_float * (view.nbytes // 4)).from_buffer_copy(view.tobytes())
            return _Converted(block, (view.nbytes // 4,), block)
        if fmt not in _FLOAT_FORMATS | _INT_FORMATS:
            raise TypeError("%s must hold real numbers, not buffer format %r" % (what, view.format))
        value = view.tolist()
    if isinstance(value, (list, tuple)):
        flat, shape = _flatten(value, what)
        for x in flat:
            if isinstance(x, bool) or not isinstance(x, numbers.Real):
                raise TypeError("%s must hold real numbers, not %s" % (what, type(x).__name__))
        block = (ctypes.c_float * len(flat))(*[float(x) for x in flat])
        return _Converted(block, shape, block)
    raise TypeError("%s must be a numpy array, array('f'), bytes or a list of numbers, not %s"
                    % (what, type(value).__name__))


def _is_float_data(value):
    """True for labels that are real numbers rather than class ids."""
    if _np is not None and isinstance(value, _np.ndarray):
        return value.dtype.kind == "f"
    if isinstance(value, (bytes, bytearray)):
        return False
    if isinstance(value, (memoryview, array.array)):
        return _format_char(memoryview(value).format) in _FLOAT_FORMATS
    if isinstance(value, (list, tuple)):
        flat, _ = _flatten(value, "labels")
        return any(isinstance(x, float) for x in flat)
    return False


# ---- views of the library's memory --------------------------------------------

def _view(address, shape, owner, writable=True):
    """A numpy array (else a memoryview) over `address` holding float32
    values of `shape`, keeping `owner` (the Model) alive while it exists."""
    n = 1
    for d in shape:
        n *= d
    block = (ctypes.c_float * max(n, 1)).from_address(address)
    block._owner = owner  # the view's base chain ends here
    if _np is not None:
        a = _np.frombuffer(block, dtype=_np.float32, count=n).reshape(shape)
        if not writable:
            a.flags.writeable = False
        return a
    view = memoryview(block).cast("B")[:4 * n]
    if not writable:
        view = view.toreadonly()
    return view.cast("f", list(shape)) if shape else view.cast("f")


def _address(pointer):
    return ctypes.cast(pointer, ctypes.c_void_p).value


class TensorInfo(NamedTuple):
    name: str
    shape: Tuple[int, ...]
    numel: int
    decays: bool  # AdamW weight decay applies


class TensorMap(collections.abc.Mapping):
    """name -> view of a parameter's data or gradient, in Transformers'
    state-dict order. Views are made on access and never copy."""

    def __init__(self, model, grads):
        self._model = model
        self._grads = grads

    def __getitem__(self, name):
        if not isinstance(name, str):
            raise KeyError(name)
        index = ctypes.c_size_t()
        status = lib.ct_model_tensor_index(self._model._live(), _encode(name), ctypes.byref(index))
        if status != 0:
            # A Mapping's missing key (so get() and `in` work); the text says whose.
            raise KeyError("%s has no tensor named %r" % (self._model.architecture, name))
        return self._model._tensor_view(index.value, self._grads)

    def __iter__(self):
        return iter(self._model.tensor_names())

    def __len__(self):
        return lib.ct_model_tensor_count(self._model._live())

    def __contains__(self, name):
        if not isinstance(name, str):
            return False
        index = ctypes.c_size_t()
        return lib.ct_model_tensor_index(self._model._live(), _encode(name),
                                         ctypes.byref(index)) == 0

    def __repr__(self):
        return "<%s of %d tensors>" % ("gradients" if self._grads else "parameters", len(self))


# ---- Batch --------------------------------------------------------------------

class Batch(OwnedHandle):
    """A batch of token ids with its labels (a ct_batch; the library copies
    every array it is given).

        Batch(input_ids, token_type_ids=None, attention_mask=None,
              start_positions=..., end_positions=..., labels=...)

    input_ids is [batch_size, seq_len] (a numpy array, nested lists, or a
    flat buffer such as array('i') or bytes of int32 with batch_size=);
    a 1-D input is one sequence. token_type_ids and attention_mask have the
    same shape (None: all 0, all 1). labels are class ids [batch_size],
    token ids [batch_size, seq_len] (masked LM, -100 = not predicted), or
    real numbers (regression; also set_float_labels)."""

    _free = lib.ct_batch_free
    _what = "Batch"

    __slots__ = ("_handle", "_has_labels", "__weakref__")

    def __init__(self, input_ids=None, token_type_ids=None, attention_mask=None, *,
                 batch_size=None, start_positions=None, end_positions=None, labels=None):
        self._handle = None
        self._has_labels = False
        handle = Handle()
        check(lib.ct_batch_create(ctypes.byref(handle)))
        self._handle = handle
        try:
            if input_ids is not None:
                self.set_inputs(input_ids, token_type_ids, attention_mask, batch_size=batch_size)
            elif token_type_ids is not None or attention_mask is not None:
                raise ValueError("token_type_ids and attention_mask need input_ids")
            if start_positions is not None or end_positions is not None:
                self.set_positions(start_positions, end_positions)
            if labels is not None:
                if _is_float_data(labels):
                    self.set_float_labels(labels)
                else:
                    self.set_labels(labels)
        except BaseException:
            self.close()
            raise


    @property
    def batch_size(self):
        return lib.ct_batch_size(self._live())

    @property
    def seq_len(self):
        return lib.ct_batch_seq_len(self._live())

    @property
    def shape(self):
        return (self.batch_size, self.seq_len)

    @property
    def has_labels(self):
        """True once positions or labels were set (set_inputs clears them)."""
        self._live()
        return self._has_labels

    def set_inputs(self, input_ids, token_type_ids=None, attention_mask=None, *, batch_size=None):
        """Replace the inputs; clears the labels."""
        ids = _to_int32(input_ids, "input_ids")
        if len(ids.shape) == 2:
            B, T = ids.shape
            if batch_size is not None and batch_size != B:
                raise ValueError("batch_size=%d but input_ids has shape %s" % (batch_size, ids.shape))
        elif len(ids.shape) == 1:
            n = ids.shape[0]
            B = 1 if batch_size is None else batch_size
            if isinstance(B, bool) or not isinstance(B, numbers.Integral) or B < 1 or n % B:
                raise ValueError("input_ids holds %d values, not batch_size=%r rows of equal length"
                                 % (n, batch_size))
            T = n // B
        else:
            raise ValueError("input_ids must be 2-D [batch_size, seq_len] (or 1-D), not shape %s"
                             % (ids.shape,))
        if B == 0 or T == 0:
            raise ValueError("input_ids is empty (shape %s)" % (ids.shape,))
        extra = []
        for value, what in ((token_type_ids, "token_type_ids"), (attention_mask, "attention_mask")):
            if value is None:
                extra.append(None)
                continue
            c = _to_int32(value, what)
            if c.size != B * T or (len(c.shape) == 2 and c.shape != (B, T)):
                raise ValueError("%s has shape %s but input_ids has (%d, %d)" % (what, c.shape, B, T))
            extra.append(c)
        check(lib.ct_batch_set_inputs(self._live(), B, T, ids.pointer,
                                      extra[0].pointer if extra[0] else None,
                                      extra[1].pointer if extra[1] else None))
        self._has_labels = False

    def set_positions(self, start_positions, end_positions):
        """Question answering: start and end token positions, [batch_size] each."""
        if start_positions is None or end_positions is None:
            raise ValueError("start_positions and end_positions go together")
        B = self.batch_size
        pair = []
        for value, what in ((start_positions, "start_positions"), (end_positions, "end_positions")):
            c = _to_int32(value, what)
            if c.size != B or len(c.shape) > 1 and c.shape != (B, 1):
                raise ValueError("%s has shape %s; the batch has %d sequences" % (what, c.shape, B))
            pair.append(c)
        check(lib.ct_batch_set_positions(self._live(), pair[0].pointer, pair[1].pointer))
        self._has_labels = True

    def set_labels(self, labels):
        """Class ids [batch_size] or masked-LM token ids [batch_size, seq_len]."""
        c = _to_int32(labels, "labels")
        if len(c.shape) == 2 and c.shape != self.shape and c.shape != (self.batch_size, 1):
            raise ValueError("labels has shape %s; the batch is %s" % (c.shape, self.shape))
        check(lib.ct_batch_set_labels(self._live(), c.pointer, c.size))
        self._has_labels = True

    def set_float_labels(self, labels):
        """Real labels (sequence classification): regression targets [batch_size]
        (or [batch_size, num_labels]), or multi-label rows [batch_size, num_labels]."""
        c = _to_float32(labels, "labels")
        check(lib.ct_batch_set_float_labels(self._live(), c.pointer, c.size))
        self._has_labels = True

    def set_example_ids(self, ids):
        """One id per example (non-negative integers below 2**64) that keys its
        dropout masks, so an example gets the same masks in any batch
        (ct_batch_set_example_ids). set_inputs clears them."""
        values = [int(i) for i in ids]
        if any(v < 0 or v >= 1 << 64 for v in values):
            raise ValueError("example ids must be in [0, 2**64)")
        arr = (ctypes.c_uint64 * max(len(values), 1))(*values)
        check(lib.ct_batch_set_example_ids(self._live(), arr, len(values)))

    def __repr__(self):
        if not self._handle:
            return "<closed Batch>"
        return "<Batch %d x %d>" % self.shape


# ---- Model --------------------------------------------------------------------

def _labels(kw):
    """(num_labels, names array or None, problem_type bytes or None) from
    from_pretrained's keywords num_labels, id2label, label2id, problem_type."""
    unknown = set(kw) - {"num_labels", "id2label", "label2id", "problem_type"}
    if unknown:
        raise TypeError("unexpected keyword argument %s (labels take num_labels, id2label, "
                        "label2id, problem_type)" % ", ".join(sorted(unknown)))
    names = kw.get("id2label")
    if isinstance(names, dict):
        ids = sorted(int(k) for k in names)
        if ids != list(range(len(ids))):
            raise ValueError("id2label's ids must be 0 to %d, not %s" % (len(ids) - 1, ids))
        names = [names[i] if i in names else names[str(i)] for i in ids]
    label2id = kw.get("label2id")
    if label2id is not None:
        order = sorted(label2id, key=lambda name: label2id[name])
        if [label2id[name] for name in order] != list(range(len(order))):
            raise ValueError("label2id's ids must be 0 to %d" % (len(order) - 1))
        if names is not None and list(names) != order:
            raise ValueError("id2label and label2id disagree")
        names = order
    if names is not None and len(names) == 0:
        raise ValueError("id2label / label2id name no labels")
    n = kw.get("num_labels")
    if n is None:
        n = len(names) if names is not None else 0
    elif names is not None and n != len(names):
        raise ValueError("num_labels %d but %d label names" % (n, len(names)))
    array = None
    if names is not None:
        array = (ctypes.c_char_p * len(names))(*[str(x).encode() for x in names])
    problem = kw.get("problem_type")
    return int(n), array, problem.encode() if problem is not None else None


class _ModelOptions:
    """A ct_model_options handle from from_pretrained's keywords (num_labels,
    id2label, label2id, problem_type, ignore_mismatched_sizes), freed on
    leaving the with block; its `handle` is None when nothing is overridden."""

    def __init__(self, kw):
        kw = dict(kw)
        self.ignore = bool(kw.pop("ignore_mismatched_sizes", False))
        self.n, self.names, self.problem = _labels(kw)
        self.handle = None

    def __enter__(self):
        if not (self.n or self.problem is not None or self.ignore):
            return None
        self.handle = Handle()
        check(lib.ct_model_options_create(ctypes.byref(self.handle)))
        try:
            if self.names is not None:
                check(lib.ct_model_options_set_labels(self.handle, self.names, self.n))
            elif self.n:
                check(lib.ct_model_options_set(self.handle, b"num_labels", str(self.n).encode()))
            if self.problem is not None:
                check(lib.ct_model_options_set(self.handle, b"problem_type", self.problem))
            if self.ignore:
                check(lib.ct_model_options_set(self.handle, b"ignore_mismatched_sizes", b"true"))
        except BaseException:
            self.__exit__()
            raise
        return self.handle

    def __exit__(self, *exc):
        if self.handle is not None:
            lib.ct_model_options_free(self.handle)
            self.handle = None


_CONFIG_KEYS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                "intermediate_size", "max_position_embeddings", "type_vocab_size",
                "num_labels", "pad_token_id")


class Model(OwnedHandle):
    """A BERT or DistilBERT model with a head (a ct_model).

        model = Model.create("bert-base-uncased", task="question-answering", seed=42)
        model = Model.load("path/to/folder", task="question-answering")
        loss = model.forward_backward(input_ids, attention_mask=mask,
                                      start_positions=s, end_positions=e)
        model.parameters()["qa_outputs.weight"]   # a view, no copy
        model.save("out", dtype="bfloat16")

    Owns a C handle: use `with`, or close(); it is also freed when
    collected. Views from parameters(), grads() and logits() keep the Model
    alive, but must not be used after close(); logits() is valid until the
    next forward pass."""

    _free = lib.ct_model_free
    _what = "Model"
    __slots__ = ("_handle", "_training", "__weakref__")

    def __init__(self, *args, **kwargs):
        raise TypeError("use Model.create(config, ...) or Model.load(folder, ...)")

    @classmethod
    def _adopt(cls, handle):
        model = object.__new__(cls)
        model._handle = handle
        model._training = True  # a new model is in training mode
        return model

    @classmethod
    def create(cls, config, task="question-answering", seed=42, **labels):
        """A new model with Hugging Face's initialisation drawn from `seed`.
        `config` is a built-in name ("bert-base-uncased", "bert-test", ...)
        or the path of a config.json. A classification head takes
        num_labels=, id2label= (a dict {id: name} or a list of names),
        label2id= and problem_type= as from_pretrained does."""
        task = _member(Task, _TASK_NAMES, task, "task")
        handle = Handle()
        with _ModelOptions(labels) as options:
            check(lib.ct_model_create_with_options(_path(config, "config"), task,
                                                   _uint64(seed, "seed"), options,
                                                   ctypes.byref(handle)))
        return cls._adopt(handle)

    @staticmethod
    def config_task(path):
        """The head (a Task) that a folder's config.json (or that file)
        names in "architectures", e.g. Task.QUESTION_ANSWERING for
        ["BertForQuestionAnswering"]; raises CputrainError when it names
        none or one this library lacks."""
        out = ctypes.c_int()
        check(lib.ct_model_config_task(_path(path, "path"), ctypes.byref(out)))
        return Task(out.value)

    @classmethod
    def load(cls, path, task=None, seed=42, **kwargs):
        """A model from a Hugging Face folder (config.json, model.safetensors
        or its sharded form) with the head `task`, by default the one its
        config.json names in "architectures" (as from_pretrained does; an
        error when it names none). Tensors the head needs but the folder
        lacks are initialised from `seed` and listed by new_tensors().
        Labels as create() takes them override config.json's;
        ignore_mismatched_sizes=True initialises (and lists) a head tensor
        of another shape instead of failing, as from_pretrained does."""
        if task is None:
            task = cls.config_task(path)
        task = _member(Task, _TASK_NAMES, task, "task")
        handle = Handle()
        with _ModelOptions(kwargs) as options:
            check(lib.ct_model_load_with_options(_path(path, "path"), task,
                                                 _uint64(seed, "seed"), options,
                                                 ctypes.byref(handle)))
        return cls._adopt(handle)

    def save(self, path, dtype="float32"):
        """Write config.json and model.safetensors into the folder `path`
        (made when missing, as save_pretrained does). dtype: "float32",
        "bfloat16" or "float16"."""
        dtype = _member(DType, _DTYPE_NAMES, dtype, "dtype")
        check(lib.ct_model_save(self._live(), _path(path, "path"), dtype))

    # ---- lifetime -------------------------------------------------------

    def __reduce__(self):
        raise TypeError("a Model cannot be pickled; save() it and load() it instead")

    # ---- description ----------------------------------------------------

    @property
    def task(self):
        return Task(lib.ct_model_get_task(self._live()))

    @property
    def architecture(self):
        """"BertForQuestionAnswering", "DistilBertForMaskedLM", ..."""
        return _decode(lib.ct_model_architecture(self._live()))

    @property
    def id2label(self):
        """{id: name} of the head's labels, as config.id2label (LABEL_<id>
        where the configuration names none)."""
        handle = self._live()
        n = self.config_int("num_labels")
        return {i: _decode(lib.ct_model_label_name(handle, i)) for i in range(n)}

    @property
    def label2id(self):
        return {name: i for i, name in self.id2label.items()}

    def config_int(self, key):
        """A number from the configuration ("hidden_size", "num_labels", ...)."""
        out = ctypes.c_int64()
        check(lib.ct_model_config_int(self._live(), _encode(key), ctypes.byref(out)))
        return out.value

    @property
    def config(self):
        """Every number config_int() knows, as a dict."""
        return {key: self.config_int(key) for key in _CONFIG_KEYS}

    def num_parameters(self):
        """Trainable scalars; tied weights count once."""
        return lib.ct_model_num_parameters(self._live())

    def memory_bytes(self, category=None):
        """Bytes the model holds now in one category ("parameters",
        "gradients", "packed_weights", "activations",
        "kernel_scratch": see memory_categories()), or with no category a
        dict of them all. The optimizer's moments: Optimizer.memory_bytes()."""
        if category is None:
            return {name: self.memory_bytes(name) for name in Model.memory_categories()}
        out = ctypes.c_size_t()
        check(lib.ct_model_memory_bytes(self._live(), _encode(category), ctypes.byref(out)))
        return out.value

    @staticmethod
    def memory_categories():
        """The categories memory_bytes() knows, in the library's order."""
        names = []
        while lib.ct_model_memory_category(len(names)) is not None:
            names.append(_decode(lib.ct_model_memory_category(len(names))))
        return names

    def new_tensors(self):
        """Names of the tensors load() had to initialise."""
        handle = self._live()
        return [_decode(lib.ct_model_new_tensor_name(handle, i))
                for i in range(lib.ct_model_new_tensor_count(handle))]

    def __repr__(self):
        if not self._handle:
            return "<closed Model>"
        return "<Model %s, %d parameters, %s, %s>" % (
            self.architecture, self.num_parameters(), self.precision.name.lower(),
            "training" if self._training else "eval")

    # ---- settings -------------------------------------------------------

    @property
    def precision(self):
        return Precision(lib.ct_model_get_precision(self._live()))

    @precision.setter
    def precision(self, value):
        value = _member(Precision, _PRECISION_NAMES, value, "precision")
        check(lib.ct_model_set_precision(self._live(), value))

    @property
    def training(self):
        """True: dropout applies (train mode); False: eval mode."""
        self._live()
        return self._training

    @training.setter
    def training(self, value):
        if not isinstance(value, bool):
            raise TypeError("training must be True or False, not %s" % type(value).__name__)
        check(lib.ct_model_set_training(self._live(), int(value)))
        self._training = value

    @property
    def gradient_checkpointing(self):
        """True: backward recomputes each layer from its input instead of
        keeping its activations (Transformers' gradient_checkpointing)."""
        return bool(lib.ct_model_get_gradient_checkpointing(self._live()))

    @gradient_checkpointing.setter
    def gradient_checkpointing(self, value):
        if not isinstance(value, bool):
            raise TypeError("gradient_checkpointing must be True or False, not %s"
                            % type(value).__name__)
        check(lib.ct_model_set_gradient_checkpointing(self._live(), int(value)))

    def set_label_smoothing(self, epsilon):
        """Trainer's LabelSmoother on the cross-entropy over `labels`
        (classification, masked LM): (1 - epsilon) * NLL + epsilon * the mean
        over the classes of -log p. QA positions and regression are not
        smoothed, as in Trainer. 0 turns it off."""
        check(lib.ct_model_set_label_smoothing(self._live(), float(epsilon)))

    def train(self, mode=True):
        """torch-style: training mode on (or off); returns the model."""
        self.training = bool(mode)
        return self

    def eval(self):
        return self.train(False)

    def set_seed(self, seed, step=0):
        """Seed of the dropout generator and its step counter (advanced by
        every training-mode forward pass)."""
        check(lib.ct_model_set_seed(self._live(), _uint64(seed, "seed"), _uint64(step, "step")))

    @property
    def threads(self):
        return lib.ct_model_get_threads(self._live())

    @threads.setter
    def threads(self, value):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError("threads must be an int, not %s" % type(value).__name__)
        if not 0 <= value <= _INT32_MAX:
            raise ValueError("threads must be 0 (automatic) or a positive count, not %d" % value)
        check(lib.ct_model_set_threads(self._live(), int(value)))

    def set_placement(self, placement):
        """Run this model's threads on the cores of `placement` (a Placement
        of this machine) and move its buffers to the placement's NUMA node.
        The calling thread is bound to the first core: call it from the
        thread that will run the model. The placement may be closed after."""
        from ._placement import Placement  # here: _placement needs nothing of this module
        if not isinstance(placement, Placement):
            raise TypeError("placement must be a Placement, not %s" % type(placement).__name__)
        check(lib.ct_model_set_placement(self._live(), placement._live()))

    # ---- computing ------------------------------------------------------

    def _batch(self, input_ids, token_type_ids, attention_mask, start_positions,
               end_positions, labels, batch_size):
        """(Batch, owned): the caller's Batch, or a new one from arrays."""
        if isinstance(input_ids, Batch):
            if any(v is not None for v in (token_type_ids, attention_mask, start_positions,
                                           end_positions, labels, batch_size)):
                raise ValueError("pass either a Batch or arrays, not both")
            return input_ids, False
        batch = Batch()
        try:
            batch.set_inputs(input_ids, token_type_ids, attention_mask, batch_size=batch_size)
            if start_positions is not None or end_positions is not None:
                batch.set_positions(start_positions, end_positions)
            if labels is not None:
                # num_labels 1 is regression, as in Transformers, whatever
                # the labels' type; real labels are regression targets or
                # multi-label rows; otherwise they are ids.
                classify = self.task == Task.SEQUENCE_CLASSIFICATION
                if classify and (self.config_int("num_labels") == 1 or _is_float_data(labels)):
                    batch.set_float_labels(labels)
                elif _is_float_data(labels):
                    raise TypeError("labels must be integer ids for %s (real labels are for "
                                    "sequence classification: regression, multi-label)"
                                    % self.architecture)
                else:
                    batch.set_labels(labels)
        except BaseException:
            batch.close()
            raise
        return batch, True

    def forward_backward(self, input_ids, token_type_ids=None, attention_mask=None,
                         start_positions=None, end_positions=None, labels=None,
                         loss_scale=1.0, *, batch_size=None):
        """Forward and backward on one batch (a Batch, or arrays as Batch
        takes them, with the head's labels); returns the loss. The gradient
        of loss * loss_scale is ADDED to the gradients (zero_grad() clears)."""
        if isinstance(loss_scale, bool) or not isinstance(loss_scale, numbers.Real):
            raise TypeError("loss_scale must be a number, not %s" % type(loss_scale).__name__)
        batch, owned = self._batch(input_ids, token_type_ids, attention_mask, start_positions,
                                   end_positions, labels, batch_size)
        try:
            loss = ctypes.c_float()
            check(lib.ct_model_forward_backward(self._live(), batch._live(), float(loss_scale),
                                                ctypes.byref(loss)))
            return loss.value
        finally:
            if owned:
                batch.close()

    def forward(self, input_ids, token_type_ids=None, attention_mask=None,
                start_positions=None, end_positions=None, labels=None, *, batch_size=None):
        """Forward only (evaluation, inference); returns the loss when labels
        are given, else None. Read the result with logits()."""
        batch, owned = self._batch(input_ids, token_type_ids, attention_mask, start_positions,
                                   end_positions, labels, batch_size)
        try:
            with_loss = batch.has_labels
            loss = ctypes.c_float()
            check(lib.ct_model_forward(self._live(), batch._live(),
                                       ctypes.byref(loss) if with_loss else None))
            return loss.value if with_loss else None
        finally:
            if owned:
                batch.close()

    def logits(self, copy=False):
        """Logits of the last forward pass: question answering [B, T, 2]
        (start, end), classification [B, num_labels], masked LM [B, T, V],
        token classification [B, T, num_labels]; 0 where the attention mask
        excludes a position, and after the forward_backward of a masked LM
        or a token classifier where the label is -100 (training scores only
        the labelled tokens).
        A read-only view valid until the next pass, unless copy=True."""
        data = ctypes.POINTER(ctypes.c_float)()
        ndim = ctypes.c_int()
        shape = (ctypes.c_int64 * 3)()
        check(lib.ct_model_logits(self._live(), ctypes.byref(data), ctypes.byref(ndim), shape))
        dims = tuple(shape[i] for i in range(ndim.value))
        view = _view(_address(data), dims, self, writable=False)
        if not copy:
            return view
        if _np is not None:
            return view.copy()
        return memoryview(bytearray(view.cast("B"))).cast("f", list(dims))

    def zero_grad(self):
        check(lib.ct_model_zero_grad(self._live()))

    def params_changed(self):
        """Call after writing into parameters() (a custom optimizer step)."""
        check(lib.ct_model_params_changed(self._live()))

    # ---- parameters -----------------------------------------------------

    def tensor_names(self):
        handle = self._live()
        return [_decode(lib.ct_model_tensor_name(handle, i))
                for i in range(lib.ct_model_tensor_count(handle))]

    def _index(self, name):
        if not isinstance(name, str):
            raise TypeError("tensor names are str, not %s" % type(name).__name__)
        index = ctypes.c_size_t()
        check(lib.ct_model_tensor_index(self._live(), _encode(name), ctypes.byref(index)))
        return index.value

    def tensor_info(self, name):
        handle, i = self._live(), self._index(name)
        shape = tuple(lib.ct_model_tensor_dim(handle, i, axis)
                      for axis in range(lib.ct_model_tensor_ndim(handle, i)))
        return TensorInfo(name, shape, lib.ct_model_tensor_numel(handle, i),
                          bool(lib.ct_model_tensor_decays(handle, i)))

    def _tensor_view(self, index, grads):
        handle = self._live()
        shape = tuple(lib.ct_model_tensor_dim(handle, index, axis)
                      for axis in range(lib.ct_model_tensor_ndim(handle, index)))
        pointer = (lib.ct_model_tensor_grad if grads else lib.ct_model_tensor_data)(handle, index)
        if not pointer:
            raise ValueError("tensor %d has no %s" % (index, "gradient" if grads else "data"))
        return _view(_address(pointer), shape, self)

    def parameters(self):
        """name -> writable view of the fp32 parameter (call params_changed()
        after writing)."""
        self._live()
        return TensorMap(self, grads=False)

    def grads(self):
        """name -> writable view of the fp32 gradient."""
        self._live()
        return TensorMap(self, grads=True)
