"""The evaluation metrics of run_glue.py and run_ner.py (ct_metric_*,
ct_seqeval_*), with the names and results of the libraries Transformers'
examples load them from:

    cputrain.metrics.accuracy(preds, labels)          # sklearn accuracy_score
    cputrain.metrics.f1(preds, labels)                # f1_score, average="binary"
    cputrain.metrics.matthews_corrcoef(preds, labels)
    cputrain.metrics.pearsonr(x, y), spearmanr(x, y)  # the coefficient only
    cputrain.metrics.seqeval(predictions, references) # evaluate's "seqeval" dict
"""

import ctypes
import numbers

from ._errors import check
from ._handle import OwnedHandle
from ._lib import lib
from ._model import _flatten, _np, _to_int32

_AVERAGES = {"binary": 0, "micro": 1, "macro": 2, "weighted": 3}
_MODES = {"default": 0, "strict": 1}


def _class_ids(predictions, references):
    p = _to_int32(predictions, "predictions")
    r = _to_int32(references, "references")
    if p.size != r.size:
        raise ValueError("predictions hold %d values and references %d" % (p.size, r.size))
    return p, r


def _num_labels(num_labels, p, r):
    """num_labels as given, else one more than the largest id."""
    if num_labels is not None:
        return int(num_labels)
    ids = [p.pointer[i] for i in range(p.size)] + [r.pointer[i] for i in range(r.size)]
    return max(ids) + 1 if ids else 1


def _to_float64(value, what):
    if _np is not None and not isinstance(value, (list, tuple)):
        a = _np.ascontiguousarray(value, dtype=_np.float64).reshape(-1)
        return a.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), a.size, a
    flat, _ = _flatten(list(value), what)
    for x in flat:
        if isinstance(x, bool) or not isinstance(x, numbers.Real):
            raise TypeError("%s must hold real numbers, not %s" % (what, type(x).__name__))
    block = (ctypes.c_double * len(flat))(*[float(x) for x in flat])
    return block, len(flat), block


def accuracy(predictions, references):
    """The share of positions where they agree."""
    p, r = _class_ids(predictions, references)
    out = ctypes.c_double()
    check(lib.ct_metric_accuracy(p.pointer, r.pointer, p.size, ctypes.byref(out)))
    return out.value


def f1(predictions, references, average="binary", num_labels=None):
    """F1 as scikit-learn's f1_score: average "binary" (class 1), "micro",
    "macro" or "weighted"; classes are 0 .. num_labels-1 (default: up to the
    largest id seen, and 2 for binary)."""
    if average not in _AVERAGES:
        raise ValueError("average must be one of %s, not %r" % (sorted(_AVERAGES), average))
    p, r = _class_ids(predictions, references)
    if average == "binary" and num_labels is None:
        num_labels = 2
    out = ctypes.c_double()
    check(lib.ct_metric_f1(p.pointer, r.pointer, p.size, _num_labels(num_labels, p, r),
                           _AVERAGES[average], ctypes.byref(out)))
    return out.value


def matthews_corrcoef(predictions, references, num_labels=None):
    """Matthews correlation (multi-class as scikit-learn); 0 when undefined."""
    p, r = _class_ids(predictions, references)
    out = ctypes.c_double()
    check(lib.ct_metric_matthews(p.pointer, r.pointer, p.size, _num_labels(num_labels, p, r),
                                 ctypes.byref(out)))
    return out.value


def _correlation(fn, x, y):
    xp, nx, keep_x = _to_float64(x, "x")
    yp, ny, keep_y = _to_float64(y, "y")
    if nx != ny:
        raise ValueError("x holds %d values and y %d" % (nx, ny))
    out = ctypes.c_double()
    check(fn(xp, yp, nx, ctypes.byref(out)))
    del keep_x, keep_y
    return out.value


def pearsonr(x, y):
    """Pearson's r as scipy.stats.pearsonr's statistic; NaN for constant input."""
    return _correlation(lib.ct_metric_pearson, x, y)


def spearmanr(x, y):
    """Spearman's rho as scipy.stats.spearmanr's; NaN for constant input."""
    return _correlation(lib.ct_metric_spearman, x, y)


class Seqeval(OwnedHandle):
    """Entity-level scores over sentences tagged with ids into `tags` (the
    model's id2label list):

        s = Seqeval(["O", "B-PER", "I-PER"])
        s.add(predicted_ids, label_ids)   # a sentence; -100 labels are skipped
        s.compute()                       # as evaluate's seqeval

    mode "default" is seqeval's (conlleval's rules: IOB1, IOB2, IOBES);
    "strict" is its mode="strict" with scheme IOB2."""

    __slots__ = ("_handle", "__weakref__")
    _free = lib.ct_seqeval_free
    _what = "Seqeval"

    def __init__(self, tags, mode="default"):
        if mode not in _MODES:
            raise ValueError("mode must be 'default' or 'strict', not %r" % (mode,))
        tags = [t if isinstance(t, bytes) else str(t).encode() for t in tags]
        array = (ctypes.c_char_p * len(tags))(*tags)
        handle = ctypes.c_void_p()
        check(lib.ct_seqeval_create(array, len(tags), _MODES[mode], ctypes.byref(handle)))
        self._handle = handle.value

    def add(self, predictions, references):
        """One sentence of tag ids."""
        p, r = _class_ids(predictions, references)
        check(lib.ct_seqeval_add(self._live(), p.pointer, r.pointer, p.size))

    def compute(self):
        """{type: {"precision", "recall", "f1", "number"}, ...,
        "overall_precision", "overall_recall", "overall_f1",
        "overall_accuracy"}: the dict evaluate.load("seqeval") returns."""
        handle = self._live()
        p, r, f, number = (ctypes.c_double(), ctypes.c_double(), ctypes.c_double(),
                           ctypes.c_int64())
        out = {}
        for i in range(lib.ct_seqeval_type_count(handle)):
            check(lib.ct_seqeval_type_scores(handle, i, ctypes.byref(p), ctypes.byref(r),
                                             ctypes.byref(f), ctypes.byref(number)))
            out[lib.ct_seqeval_type_name(handle, i).decode()] = {
                "precision": p.value, "recall": r.value, "f1": f.value, "number": number.value}
        a = ctypes.c_double()
        check(lib.ct_seqeval_overall(handle, ctypes.byref(p), ctypes.byref(r), ctypes.byref(f),
                                     ctypes.byref(a)))
        out.update(overall_precision=p.value, overall_recall=r.value, overall_f1=f.value,
                   overall_accuracy=a.value)
        return out


def seqeval(predictions, references, mode="default"):
    """evaluate.load("seqeval").compute(predictions=..., references=...) for
    lists of sentences of tag strings."""
    if len(predictions) != len(references):
        raise ValueError("%d predicted sentences and %d references"
                         % (len(predictions), len(references)))
    tags = sorted({t for sentence in list(predictions) + list(references) for t in sentence})
    ids = {t: i for i, t in enumerate(tags)}
    with Seqeval(tags or ["O"], mode) as s:
        for k, (pred, ref) in enumerate(zip(predictions, references)):
            if len(pred) != len(ref):
                raise ValueError("sentence %d: %d predicted tags and %d references"
                                 % (k, len(pred), len(ref)))
            s.add([ids[t] for t in pred], [ids[t] for t in ref])
        return s.compute()
