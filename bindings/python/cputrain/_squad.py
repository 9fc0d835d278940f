"""SQuAD question answering: examples read by the library (ct_squad), the
official EM/F1 scores (ct_squad_scores), question-answering features for
training and evaluation (ct_qa_features) and run_qa.py's post-processing of
start/end logits into answers (ct_squad_preds).

    examples = SquadExamples.load("dev-v1.1.json")
    features = QAFeatures.create(tokenizer, examples, max_seq_length=384, doc_stride=128)
    trainer = Trainer(model, args, train_dataset=features.dataset)   # a training set
    start, end = features.logits(model)                              # an evaluation set
    preds = features.postprocess(start, end, n_best_size=20, max_answer_length=30)
    squad_score(preds, examples)     # {"exact_match": 81.2, "f1": 88.5}
    preds.save("out", "eval")        # eval_predictions.json, eval_nbest_predictions.json

Objects that hand out views of library memory (features' dataset, offsets,
predictions' texts) keep the object that owns that memory alive."""

import collections.abc
import ctypes
import enum
import math
import numbers
import os

from ._args import _decode, _encode
from ._errors import check
from ._lib import COUNT_PROGRESS_FN, Handle, lib
from ._model import Model, Task, _np, _path, _to_float32
from ._tokenizer import Tokenizer
from ._train import Dataset

_size, _i64, _f64, _int = ctypes.c_size_t, ctypes.c_int64, ctypes.c_double, ctypes.c_int


class Field(enum.IntEnum):
    """ct_squad_field: the text fields of an example."""
    ID = 0
    TITLE = 1
    QUESTION = 2
    CONTEXT = 3


class Stat(enum.IntEnum):
    """ct_squad_stat: what ct_squad_load counted while reading."""
    EMPTY_CONTEXT = 0
    ANSWER_MISMATCH = 1
    DUPLICATE_ID = 2
    IMPOSSIBLE_MISMATCH = 3


def _raw(name, restype, argtypes):
    """A second function object for `name` whose result is an address (the
    declared one converts a char * to bytes, which stops at a NUL the file
    wrote as \\u0000; ct_squad_text reports the full length)."""
    fn = lib[name]  # CDLL.__getitem__ makes a new object: PROTOTYPES' stays as declared
    fn.restype, fn.argtypes = restype, argtypes
    return fn


_squad_text_raw = _raw("ct_squad_text", ctypes.c_void_p,
                       [Handle, _size, _int, ctypes.POINTER(_size)])
_preds_text_raw = _raw("ct_squad_preds_text", ctypes.c_void_p,
                       [Handle, _size, ctypes.POINTER(_size)])


def _utf8(address, length):
    return ctypes.string_at(address, length).decode("utf-8", "surrogateescape")


def _char_p_text(pointer, length):
    """Text of a `const char *` out parameter (a c_char_p) of `length` bytes."""
    address = ctypes.cast(pointer, ctypes.c_void_p).value
    return _utf8(address, length) if address else None


def _index(value, n, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError("%s must be an int, not %s" % (what, type(value).__name__))
    i = int(value)
    if i < 0:
        i += n
    if not 0 <= i < n:
        raise IndexError("%s %d out of range (%d)" % (what, value, n))
    return i


# ---- examples -------------------------------------------------------------------

class SquadExamples(collections.abc.Sequence):
    """The examples of a SQuAD file (v1.1 / v2.0 JSON, flat records or JSON
    lines), read by the library (a ct_squad), read-only:

        ex = SquadExamples.load("dev-v1.1.json")
        len(ex), ex.ids[0], ex.questions[0], ex.contexts[0]
        ex.answers[0]     # {"text": [...], "answer_start": [...]} as in `datasets`
        ex[0]             # one example as a dict, as a `datasets` row

    Owns a C handle: use `with`, or close(); it is also freed when collected.
    Features and predictions made from it keep it alive."""

    __slots__ = ("_handle", "_path", "__weakref__")

    def __init__(self, *args, **kwargs):
        raise TypeError("use SquadExamples.load(path)")

    @classmethod
    def load(cls, path):
        handle = Handle()
        check(lib.ct_squad_load(_path(path, "path"), ctypes.byref(handle)))
        self = object.__new__(cls)
        self._handle = handle
        self._path = os.fspath(path)
        return self

    @classmethod
    def from_table(cls, table, what="table"):
        """The examples of a Table of flat records (a .parquet / .arrow file,
        Table.load_dataset): columns id, title, context, question,
        answers.text, answers.answer_start."""
        handle = Handle()
        check(lib.ct_squad_from_table(table._live(), what.encode(), ctypes.byref(handle)))
        self = object.__new__(cls)
        self._handle = handle
        self._path = what
        return self

    def close(self):
        handle, self._handle = self._handle, None
        if handle:
            lib.ct_squad_free(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self, _free=lib.ct_squad_free):
        handle = getattr(self, "_handle", None)
        if handle:
            self._handle = None
            _free(handle)

    def __reduce__(self):
        raise TypeError("SquadExamples cannot be pickled; load() the file again")

    def _live(self):
        if not self._handle:
            raise ValueError("operation on closed SquadExamples")
        return self._handle

    # ---- fields ---------------------------------------------------------

    def __len__(self):
        return lib.ct_squad_count(self._live())

    def text(self, example, field):
        """One field (Field or its name: "id", "title", "question",
        "context") of one example, the whole text even past a \\u0000."""
        handle = self._live()
        i = _index(example, lib.ct_squad_count(handle), "example")
        if isinstance(field, str):
            field = Field[field.upper()]
        n = _size()
        address = _squad_text_raw(handle, i, Field(field), ctypes.byref(n))
        if not address:
            raise IndexError("no field %r in example %d" % (field, i))
        return _utf8(address, n.value)

    def _column(self, field):
        handle = self._live()
        return [self.text(i, field) for i in range(lib.ct_squad_count(handle))]

    @property
    def ids(self):
        return self._column(Field.ID)

    @property
    def titles(self):
        return self._column(Field.TITLE)

    @property
    def questions(self):
        return self._column(Field.QUESTION)

    @property
    def contexts(self):
        return self._column(Field.CONTEXT)

    def answer_list(self, example):
        """The reference answers of one example: a list of dicts with
        text, answer_start (characters), byte_start (-1 when outside the
        context) and matches (the context holds the text there)."""
        handle = self._live()
        i = _index(example, lib.ct_squad_count(handle), "example")
        out = []
        for k in range(lib.ct_squad_answer_count(handle, i)):
            text, n = ctypes.c_char_p(), _size()
            char_start, byte_start, matches = _i64(), _i64(), _int()
            check(lib.ct_squad_answer(handle, i, k, ctypes.byref(text), ctypes.byref(n),
                                      ctypes.byref(char_start), ctypes.byref(byte_start),
                                      ctypes.byref(matches)))
            out.append({"text": _char_p_text(text, n.value), "answer_start": char_start.value,
                        "byte_start": byte_start.value, "matches": bool(matches.value)})
        return out

    def answers_of(self, example):
        """One example's answers as `datasets` holds them:
        {"text": [...], "answer_start": [...]}."""
        answers = self.answer_list(example)
        return {"text": [a["text"] for a in answers],
                "answer_start": [a["answer_start"] for a in answers]}

    @property
    def answers(self):
        """Every example's answers_of(), in order."""
        return [self.answers_of(i) for i in range(len(self))]

    def context_chars(self, example):
        """len(context) in Python."""
        handle = self._live()
        return lib.ct_squad_context_chars(handle, _index(example, lib.ct_squad_count(handle),
                                                         "example"))

    def __getitem__(self, example):
        if isinstance(example, slice):
            return [self[i] for i in range(*example.indices(len(self)))]
        i = _index(example, len(self), "example")
        return {"id": self.text(i, Field.ID), "title": self.text(i, Field.TITLE),
                "context": self.text(i, Field.CONTEXT),
                "question": self.text(i, Field.QUESTION), "answers": self.answers_of(i)}

    def find(self, example_id):
        """Index of the first example with this id (KeyError when none)."""
        handle = self._live()
        index = _size()
        status = lib.ct_squad_find(handle, _encode(example_id), ctypes.byref(index))
        if status != 0:
            if lib.ct_status_name(status) == b"CT_ERR_NOT_FOUND":
                raise KeyError(example_id)
            check(status)
        return index.value

    def stat(self, stat):
        """How many of one kind of irregularity loading met (a Stat)."""
        return lib.ct_squad_stat_count(self._live(), Stat(stat))

    @property
    def stats(self):
        handle = self._live()
        return {s.name.lower(): lib.ct_squad_stat_count(handle, s) for s in Stat}

    def __repr__(self):
        if not self._handle:
            return "<closed SquadExamples>"
        return "<SquadExamples %d examples from %s>" % (len(self), self._path)


# ---- scores ---------------------------------------------------------------------

class SquadScores(collections.abc.Mapping):
    """The official SQuAD metrics (a ct_squad_scores) as an ordered,
    read-only name -> number mapping (counts are ints), which can be
    renamed and extended as Trainer.evaluate does and saved as
    <split>_results.json by the library:

        scores = SquadScores.compute(preds, examples)
        scores.add_prefix("eval"); scores.set("eval_samples", 100, integer=True)
        scores.save("out/eval_results.json")"""

    __slots__ = ("_handle", "__weakref__")

    def __init__(self, *args, **kwargs):
        raise TypeError("use SquadScores.compute(predictions, examples_or_answers)")

    @classmethod
    def compute(cls, predictions, examples_or_answers, version_2_with_negative=False,
                no_answer_probs=None, no_answer_threshold=1.0):
        """See squad_score()."""
        keep = []
        preds_ptr, n = _predictions(predictions, examples_or_answers, version_2_with_negative,
                                    keep)
        answers_ptr, counts_ptr = _answers(examples_or_answers, n, keep)
        probs = None
        if no_answer_probs is not None:
            if isinstance(no_answer_probs, collections.abc.Mapping):
                if not isinstance(examples_or_answers, SquadExamples):
                    raise TypeError("no_answer_probs by id needs SquadExamples")
                ids = examples_or_answers.ids[:n]
                no_answer_probs = [no_answer_probs[i] for i in ids]
            values = [float(p) for p in no_answer_probs]
            if len(values) != n:
                raise ValueError("no_answer_probs has %d values for %d questions"
                                 % (len(values), n))
            probs = (_f64 * max(n, 1))(*values)
        handle = Handle()
        check(lib.ct_squad_score(preds_ptr, n, answers_ptr, counts_ptr,
                                 int(bool(version_2_with_negative)), probs,
                                 float(no_answer_threshold), ctypes.byref(handle)))
        del keep
        self = object.__new__(cls)
        self._handle = handle
        return self

    def close(self):
        handle, self._handle = self._handle, None
        if handle:
            lib.ct_squad_scores_free(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self, _free=lib.ct_squad_scores_free):
        handle = getattr(self, "_handle", None)
        if handle:
            self._handle = None
            _free(handle)

    def __reduce__(self):
        return (dict, (dict(self),))

    def _live(self):
        if not self._handle:
            raise ValueError("operation on closed SquadScores")
        return self._handle

    def _value(self, handle, i):
        v = lib.ct_squad_scores_value(handle, i)
        return int(v) if lib.ct_squad_scores_is_integer(handle, i) and math.isfinite(v) else v

    def __len__(self):
        return lib.ct_squad_scores_count(self._live())

    def __iter__(self):
        handle = self._live()
        return iter([_decode(lib.ct_squad_scores_name(handle, i))
                     for i in range(lib.ct_squad_scores_count(handle))])

    def items(self):
        handle = self._live()
        return [(_decode(lib.ct_squad_scores_name(handle, i)), self._value(handle, i))
                for i in range(lib.ct_squad_scores_count(handle))]

    def __getitem__(self, name):
        handle = self._live()
        if not isinstance(name, str):
            raise KeyError(name)
        for i in range(lib.ct_squad_scores_count(handle)):
            if _decode(lib.ct_squad_scores_name(handle, i)) == name:
                return self._value(handle, i)
        raise KeyError(name)

    def set(self, name, value, integer=None):
        """Add an entry or replace one in place (metrics["eval_samples"] = n);
        integer defaults to whether value is an int."""
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError("metric %s must be a number, not %s" % (name, type(value).__name__))
        if integer is None:
            integer = isinstance(value, numbers.Integral)
        check(lib.ct_squad_scores_set(self._live(), _encode(name), float(value), int(integer)))

    def add_prefix(self, prefix):
        """Rename every entry to "<prefix>_<name>" (unless it has it already)."""
        check(lib.ct_squad_scores_add_prefix(self._live(), _encode(prefix)))

    def save(self, path):
        """json.dump(metrics, indent=4, sort_keys=True), atomically."""
        check(lib.ct_squad_scores_save(self._live(), _path(path, "path")))

    def save_metrics(self, output_dir, split):
        """Trainer.save_metrics(split, metrics): output_dir/<split>_results.json,
        merged into output_dir/all_results.json."""
        check(lib.ct_squad_scores_save_metrics(self._live(), _path(output_dir, "output_dir"),
                                               _encode(split)))

    def __repr__(self):
        if not self._handle:
            return "<closed SquadScores>"
        return "SquadScores(%r)" % dict(self.items())


def _predictions(predictions, reference, v2, keep):
    """(const char *const * pointer, count) for ct_squad_score."""
    if isinstance(predictions, Predictions):
        n = len(predictions)
        keep.append(predictions)
        return lib.ct_squad_preds_texts(predictions._live()), n
    if isinstance(predictions, collections.abc.Mapping):
        # {id: text}, as utils_qa.py returns them: ordered as the examples.
        if not isinstance(reference, SquadExamples):
            raise TypeError("predictions by id need SquadExamples to order them")
        ids = reference.ids
        missing = [i for i in ids if i not in predictions]
        n = len(ids) - len(missing)
        if missing and ids[n:] != missing:
            raise ValueError("no prediction for id %r" % missing[0])
        predictions = [predictions[i] for i in ids[:n]]
    if isinstance(predictions, (str, bytes)):
        raise TypeError("predictions must be a list of texts, not one text")
    texts = []
    for p in predictions:
        if isinstance(p, collections.abc.Mapping):  # {"id", "prediction_text"} (evaluate)
            p = p["prediction_text"]
        if p is None:
            texts.append(None)
        elif isinstance(p, str):
            texts.append(p.encode("utf-8", "surrogateescape"))
        elif isinstance(p, (bytes, bytearray)):
            texts.append(bytes(p))
        else:
            raise TypeError("a prediction must be a str or None, not %s" % type(p).__name__)
    array = (ctypes.c_char_p * max(len(texts), 1))(*texts)
    keep.append(array)
    return array, len(texts)


def _answer_texts(item):
    if isinstance(item, collections.abc.Mapping):
        item = item["answers"] if "answers" in item else item
        item = item["text"] if isinstance(item, collections.abc.Mapping) else item
    if isinstance(item, (str, bytes)):
        item = [item]
    out = []
    for t in item:
        if isinstance(t, collections.abc.Mapping):
            t = t["text"]
        if isinstance(t, str):
            t = t.encode("utf-8", "surrogateescape")
        elif not isinstance(t, (bytes, bytearray)):
            raise TypeError("an answer must be a str, not %s" % type(t).__name__)
        out.append(bytes(t))
    return out


def _answers(reference, n, keep):
    """(answers, answer_counts) pointers for ct_squad_score."""
    if isinstance(reference, SquadExamples):
        handle = reference._live()
        if n > lib.ct_squad_count(handle):
            raise ValueError("%d predictions for %d examples" % (n, lib.ct_squad_count(handle)))
        keep.append(reference)
        # The first n examples' answers are a prefix of these arrays.
        return lib.ct_squad_answer_texts(handle), lib.ct_squad_answer_counts(handle)
    if isinstance(reference, (str, bytes)) or not isinstance(reference, collections.abc.Iterable):
        raise TypeError("examples_or_answers must be SquadExamples or a list of answer lists")
    per = [_answer_texts(item) for item in reference]
    if len(per) != n:
        raise ValueError("%d predictions for %d questions" % (n, len(per)))
    flat = [t for texts in per for t in texts]
    texts = (ctypes.c_char_p * max(len(flat), 1))(*flat)
    counts = (_size * max(n, 1))(*[len(t) for t in per])
    keep.extend((texts, counts))
    return texts, counts


def squad_score(predictions, examples_or_answers, version_2_with_negative=False,
                no_answer_probs=None, no_answer_threshold=1.0):
    """The official SQuAD scores as `evaluate`'s squad / squad_v2 metrics
    compute them, as a dict of percentages (counts as ints).

    predictions: Predictions, a list of texts (None: unanswered under v1;
    "" predicts no answer under v2), {"prediction_text": ...} dicts, or
    {id: text} with SquadExamples. examples_or_answers: SquadExamples (the
    first len(predictions) examples are scored) or, per question, a list of
    answer texts, a `datasets` answers dict or a {"answers": ...} record.
    version_2_with_negative=False gives exact_match and f1; True gives
    exact, f1, total, HasAns_*, NoAns_*, best_*."""
    scores = SquadScores.compute(predictions, examples_or_answers, version_2_with_negative,
                                 no_answer_probs, no_answer_threshold)
    try:
        return dict(scores.items())
    finally:
        scores.close()


# ---- features -------------------------------------------------------------------

class _BorrowedDataset(Dataset):
    """The ct_dataset a QAFeatures owns, usable wherever a Dataset is; it
    keeps the features alive, never frees the handle, and takes no new
    examples (the features' example index and offsets would no longer
    match)."""

    __slots__ = ("_owner",)

    def __init__(self, *args, **kwargs):
        raise TypeError("a borrowed dataset comes from QAFeatures.dataset")

    @classmethod
    def _of(cls, owner, handle):
        self = object.__new__(cls)
        self._handle = handle
        self._task = Task.QUESTION_ANSWERING
        self._owner = owner
        return self

    def close(self):
        """Let go of the features' dataset (it is freed with them)."""
        self._handle = None
        self._owner = None

    def __del__(self):
        pass

    def _live(self):
        if not self._handle:
            raise ValueError("operation on a closed Dataset")
        self._owner._live()  # the features still exist
        return self._handle

    def _add(self, *args, **kwargs):
        raise TypeError("the dataset of QAFeatures is read-only")

    def __repr__(self):
        if not self._handle:
            return "<closed Dataset of QAFeatures>"
        return "<Dataset of QAFeatures: %d question-answering features of %d tokens>" % (
            len(self), self.seq_len)


class QAFeatures:
    """Question-answering features of SQuAD examples, as run_qa.py's
    prepare_train_features / prepare_validation_features build them
    (question + context windows of max_seq_length tokens overlapping by
    doc_stride, padded, answers as token positions or [CLS]):

        f = QAFeatures.create(tokenizer, examples, max_seq_length=384, doc_stride=128)
        Trainer(model, args, train_dataset=f.dataset)
        start, end = f.logits(model)          # evaluation: forward every feature
        preds = f.postprocess(start, end)

    Keeps the tokenizer and examples it was made from alive."""

    __slots__ = ("_handle", "_examples", "_tokenizer", "_max_examples", "__weakref__")

    def __init__(self, *args, **kwargs):
        raise TypeError("use QAFeatures.create(tokenizer, examples, ...)")

    @classmethod
    def create(cls, tokenizer, examples, max_seq_length=384, doc_stride=128, max_examples=-1,
               progress=None):
        """max_examples >= 0 uses only the first that many examples
        (--max_train_samples / --max_eval_samples); -1 or None all.
        progress(done, total), if given, is called every few hundred
        examples and last with done == total (a bar, as datasets.map shows);
        a true return value stops the build (CputrainError CANCELLED)."""
        if not isinstance(tokenizer, Tokenizer):
            raise TypeError("tokenizer must be a cputrain.Tokenizer, not %s"
                            % type(tokenizer).__name__)
        if not isinstance(examples, SquadExamples):
            raise TypeError("examples must be SquadExamples, not %s" % type(examples).__name__)
        if max_examples is None:
            max_examples = -1
        for value, what in ((max_seq_length, "max_seq_length"), (doc_stride, "doc_stride"),
                            (max_examples, "max_examples")):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise TypeError("%s must be an int, not %s" % (what, type(value).__name__))
        if not 0 < max_seq_length < (1 << 31) or not 0 <= doc_stride < (1 << 31):
            raise ValueError("max_seq_length must be positive and doc_stride not negative")
        handle = Handle()
        if progress is None:
            check(lib.ct_qa_features_create(tokenizer._live(), examples._live(),
                                            max(int(max_examples), -1), int(max_seq_length),
                                            int(doc_stride), ctypes.byref(handle)))
        else:
            raised = []

            def trampoline(user, done, total):
                try:
                    return 1 if progress(done, total) else 0
                except BaseException as e:  # noqa: BLE001 - re-raised below
                    raised.append(e)
                    return 1

            fn = COUNT_PROGRESS_FN(trampoline)
            status = lib.ct_qa_features_create_with_progress(
                tokenizer._live(), examples._live(), max(int(max_examples), -1),
                int(max_seq_length), int(doc_stride), fn, None, ctypes.byref(handle))
            if raised:
                raise raised[0]
            check(status)
        self = object.__new__(cls)
        self._handle = handle
        self._examples = examples
        self._tokenizer = tokenizer
        self._max_examples = int(max_examples)
        return self

    def close(self):
        """Free the features now; their dataset and views become invalid."""
        handle, self._handle = self._handle, None
        if handle:
            lib.ct_qa_features_free(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self, _free=lib.ct_qa_features_free):
        handle = getattr(self, "_handle", None)
        if handle:
            self._handle = None
            _free(handle)

    def __reduce__(self):
        raise TypeError("QAFeatures cannot be pickled")

    def _live(self):
        if not self._handle:
            raise ValueError("operation on closed QAFeatures")
        return self._handle

    # ---- contents -------------------------------------------------------

    @property
    def examples(self):
        return self._examples

    @property
    def n_examples(self):
        """How many examples the features cover (max_examples applied)."""
        n = len(self._examples)
        return n if self._max_examples < 0 else min(n, self._max_examples)

    def __len__(self):
        return lib.ct_qa_features_count(self._live())

    @property
    def seq_len(self):
        return lib.ct_qa_features_seq_len(self._live())

    @property
    def answers_outside(self):
        """Windows whose answer fell outside them (labelled [CLS])."""
        return lib.ct_qa_features_answers_outside(self._live())

    @property
    def dataset(self):
        """The features as a question-answering Dataset (borrowed: it keeps
        these features alive and is freed with them)."""
        handle = lib.ct_qa_features_dataset(self._live())
        if not handle:
            raise ValueError("the features have no dataset")
        return _BorrowedDataset._of(self, handle)

    def _ints(self, pointer, ctype, shape):
        n = 1
        for d in shape:
            n *= d
        wide = ctype is _i64
        if not n:
            if _np is not None:
                return _np.zeros(shape, _np.int64 if wide else _np.int32)
            return memoryview(b"").cast("q" if wide else "i")
        block = (ctype * n).from_address(ctypes.cast(pointer, ctypes.c_void_p).value)
        block._owner = self  # the view keeps the features alive
        if _np is not None:
            a = _np.frombuffer(block, dtype=_np.int64 if wide else _np.int32).reshape(shape)
            a.flags.writeable = False
            return a
        view = memoryview(block).cast("B").toreadonly()
        return view.cast("q" if wide else "i", list(shape))

    @property
    def example_index(self):
        """Per feature, its example's index (a read-only int64 view)."""
        handle = self._live()
        return self._ints(lib.ct_qa_features_example_index(handle), _i64,
                          (lib.ct_qa_features_count(handle),))

    @property
    def offsets(self):
        """[features, seq_len, 2] code-point spans of each token in its
        context, -1 for tokens that are not context (read-only int32)."""
        handle = self._live()
        return self._ints(lib.ct_qa_features_offsets(handle), ctypes.c_int32,
                          (lib.ct_qa_features_count(handle), lib.ct_qa_features_seq_len(handle),
                           2))

    # ---- evaluation ---------------------------------------------------------

    def logits(self, model, batch_size=8, rows=None, progress=None):
        """Forward every feature through `model` in eval mode, batch_size at
        a time, as Trainer.predict: (start_logits, end_logits), each
        [features, seq_len] float32 (numpy arrays, else array('f') flat).
        rows: a range of features to compute (one rank's block); the other
        rows stay zero. The model's training mode is restored afterwards.
        progress(done, total), if given, is called after each batch."""
        if not isinstance(model, Model):
            raise TypeError("model must be a cputrain.Model, not %s" % type(model).__name__)
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) \
                or batch_size < 1:
            raise ValueError("batch_size must be a positive int")
        from ._model import Batch  # noqa: PLC0415 - only here
        dataset, n, T = self.dataset, len(self), self.seq_len
        rows = range(n) if rows is None else rows
        if not isinstance(rows, range) or rows.step != 1 or not 0 <= rows.start <= rows.stop:
            raise ValueError("rows must be a range of features with step 1")
        if _np is not None:
            start = _np.zeros((n, T), _np.float32)
            end = _np.zeros((n, T), _np.float32)
        else:
            import array  # noqa: PLC0415
            start, end = array.array("f", bytes(4 * n * T)), array.array("f", bytes(4 * n * T))
        was_training = model.training
        model.training = False
        try:
            with Batch() as batch:
                stop = min(rows.stop, n)
                batches = -(-max(stop - rows.start, 0) // batch_size)
                for first in range(rows.start, stop, batch_size):
                    m = min(batch_size, stop - first)
                    dataset.batch(range(first, first + m), batch)
                    model.forward(batch)
                    view = model.logits()
                    if _np is not None:
                        start[first:first + m] = view[:m, :, 0]
                        end[first:first + m] = view[:m, :, 1]
                    else:
                        flat = view.cast("B").cast("f").tolist()
                        start[first * T:(first + m) * T] = array.array("f", flat[0::2])
                        end[first * T:(first + m) * T] = array.array("f", flat[1::2])
                    if progress is not None:
                        progress((first - rows.start) // batch_size + 1, batches)
        finally:
            model.training = was_training
        return start, end

    def postprocess(self, start_logits, end_logits, version_2_with_negative=False,
                    n_best_size=20, max_answer_length=30, null_score_diff_threshold=0.0):
        """See postprocess()."""
        return postprocess(self, start_logits, end_logits, version_2_with_negative,
                           n_best_size, max_answer_length, null_score_diff_threshold)

    def __repr__(self):
        if not self._handle:
            return "<closed QAFeatures>"
        return "<QAFeatures %d features of %d tokens from %d examples>" % (
            len(self), self.seq_len, self.n_examples)


# ---- post-processing ----------------------------------------------------------------

class Predictions(collections.abc.Sequence):
    """Answers post-processed from logits (a ct_squad_preds): a sequence of
    predicted texts in example order ("" for no answer under v2).

        preds[i], preds.to_dict()            # {id: text}, as utils_qa.py returns
        preds.nbest(i)                       # [{"text", "start_logit", "end_logit", "probability"}]
        preds.null_odds(i)                   # v2: null score minus the best span's
        preds.save("out", "eval")            # eval_predictions.json, ..._nbest_..., ..._null_odds"""

    __slots__ = ("_handle", "_ids", "_version_2", "__weakref__")

    def __init__(self, *args, **kwargs):
        raise TypeError("use postprocess(features, start_logits, end_logits, ...)")

    def close(self):
        handle, self._handle = self._handle, None
        if handle:
            lib.ct_squad_preds_free(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self, _free=lib.ct_squad_preds_free):
        handle = getattr(self, "_handle", None)
        if handle:
            self._handle = None
            _free(handle)

    def __reduce__(self):
        return (dict, (self.to_dict(),))

    def _live(self):
        if not self._handle:
            raise ValueError("operation on closed Predictions")
        return self._handle

    @property
    def version_2_with_negative(self):
        return self._version_2

    @property
    def ids(self):
        return list(self._ids)

    def __len__(self):
        return lib.ct_squad_preds_count(self._live())

    def __getitem__(self, example):
        if isinstance(example, slice):
            return [self[i] for i in range(*example.indices(len(self)))]
        handle = self._live()
        i = _index(example, lib.ct_squad_preds_count(handle), "example")
        n = _size()
        address = _preds_text_raw(handle, i, ctypes.byref(n))
        return _utf8(address, n.value)

    def to_dict(self):
        """{id: predicted text}, as postprocess_qa_predictions returns."""
        return dict(zip(self._ids, self[:]))

    def null_odds(self, example):
        """v2: the null score minus the best span's score (NaN under v1)."""
        handle = self._live()
        return lib.ct_squad_preds_null_odds(handle, _index(example,
                                                           lib.ct_squad_preds_count(handle),
                                                           "example"))

    def nbest(self, example):
        """The n-best list of one example, best first."""
        handle = self._live()
        i = _index(example, lib.ct_squad_preds_count(handle), "example")
        out = []
        for k in range(lib.ct_squad_preds_nbest_count(handle, i)):
            text, n = ctypes.c_char_p(), _size()
            s, e, p = _f64(), _f64(), _f64()
            check(lib.ct_squad_preds_nbest(handle, i, k, ctypes.byref(text), ctypes.byref(n),
                                           ctypes.byref(s), ctypes.byref(e), ctypes.byref(p)))
            out.append({"text": _char_p_text(text, n.value) or "", "start_logit": s.value,
                        "end_logit": e.value, "probability": p.value})
        return out

    def save(self, output_dir, prefix="eval"):
        """Write <prefix>_predictions.json, <prefix>_nbest_predictions.json
        and (v2) <prefix>_null_odds.json into the existing folder
        output_dir, as utils_qa.py writes them; prefix None drops it."""
        check(lib.ct_squad_preds_save(self._live(), _path(output_dir, "output_dir"),
                                      None if prefix is None else _encode(prefix)))

    def __repr__(self):
        if not self._handle:
            return "<closed Predictions>"
        return "<Predictions of %d examples%s>" % (len(self), " (v2)" if self._version_2 else "")


def _size_arg(value, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError("%s must be an int, not %s" % (what, type(value).__name__))
    if value < 0:
        raise ValueError("%s must not be negative" % what)
    return int(value)


def postprocess(features, start_logits, end_logits, version_2_with_negative=False,
                n_best_size=20, max_answer_length=30, null_score_diff_threshold=0.0):
    """From per-feature logits ([features, seq_len] each, as
    QAFeatures.logits returns) to one answer per example, as
    postprocess_qa_predictions in run_qa.py's utils_qa.py. Returns
    Predictions (save() writes the JSON files)."""
    if not isinstance(features, QAFeatures):
        raise TypeError("features must be QAFeatures, not %s" % type(features).__name__)
    handle = features._live()
    examples = features._examples._live()
    n_features, T = lib.ct_qa_features_count(handle), lib.ct_qa_features_seq_len(handle)
    start = _to_float32(start_logits, "start_logits")
    end = _to_float32(end_logits, "end_logits")
    for c, what in ((start, "start_logits"), (end, "end_logits")):
        if c.size != n_features * T:
            raise ValueError("%s has shape %s; the features need [%d, %d]"
                             % (what, c.shape, n_features, T))
    n_examples = features.n_examples
    out = Handle()
    check(lib.ct_squad_postprocess(
        lib.ct_squad_texts(examples, Field.ID), lib.ct_squad_texts(examples, Field.CONTEXT),
        n_examples, lib.ct_qa_features_example_index(handle), n_features, T,
        start.pointer, end.pointer, lib.ct_qa_features_offsets(handle),
        int(bool(version_2_with_negative)), _size_arg(n_best_size, "n_best_size"),
        _size_arg(max_answer_length, "max_answer_length"), float(null_score_diff_threshold),
        ctypes.byref(out)))
    del start, end  # owned the memory the call read
    preds = object.__new__(Predictions)
    preds._handle = out
    preds._version_2 = bool(version_2_with_negative)
    preds._ids = tuple(features._examples.ids[:n_examples])
    return preds
