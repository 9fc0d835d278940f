"""Workflow: an example script's run around the Trainer (a ct_workflow) —
joining the job, each rank's log level, output_dir held for the whole run
with run_qa.py's rule for what it holds, a dataset's files, results files,
the model card, progress bars."""

import ctypes
import os

from ._args import TrainingArgs, _decode, _encode
from ._dist import Dist
from ._errors import check
from ._handle import OwnedHandle
from ._lib import Handle, lib


class _BorrowedDist(Dist):
    """The workflow's ct_dist: usable wherever a Dist is, freed with the
    workflow (never by itself)."""

    __slots__ = ("_owner",)

    def __init__(self, *args, **kwargs):
        raise TypeError("a borrowed Dist comes from Workflow.dist")

    @classmethod
    def _of(cls, owner, handle):
        self = object.__new__(cls)
        self._handle = handle
        self._owner = owner
        return self

    def close(self):
        self._handle = None
        self._owner = None

    def __del__(self):
        pass

    def _live(self):
        if not self._handle:
            raise ValueError("operation on a closed Dist")
        self._owner._live()
        return self._handle


def dataset_file(folder, name, split, official=None):
    """--dataset_name NAME read from `folder` (None: $HF_DATASETS_CACHE):
    the split's file, split.json, split.jsonl or `official`, there or under
    folder/NAME. Raises CputrainError naming the places looked at."""
    out = ctypes.create_string_buffer(4096)
    check(lib.ct_workflow_dataset_file(None if folder is None else os.fsencode(folder),
                                       _encode(name), _encode(split),
                                       None if official is None else _encode(official), out,
                                       len(out)))
    return os.fsdecode(out.value)


class Workflow(OwnedHandle):
    """The workflow of a script standing for Transformers' `script`
    ("run_qa.py") over its TrainingArgs (kept alive by the workflow, and
    changed by hold_output_dir when it resumes)."""

    _free = lib.ct_workflow_free
    _what = "Workflow"
    __slots__ = ("_handle", "_args", "_dist")

    def __init__(self, script, args):
        if not isinstance(args, TrainingArgs):
            raise TypeError("Workflow needs a cputrain.TrainingArgs")
        handle = Handle()
        check(lib.ct_workflow_create(_encode(script), args._live(), ctypes.byref(handle)))
        self._handle = handle
        self._args = args
        self._dist = None

    def join(self):
        """Join the job (ddp_backend, ddp_timeout, the launcher's
        environment) and set this process's log level as Trainer does."""
        check(lib.ct_workflow_join(self._live()))
        self._dist = _BorrowedDist._of(self, lib.ct_workflow_dist(self._handle))
        return self._dist

    @property
    def dist(self):
        """The job, after join()."""
        if self._dist is None:
            raise ValueError("Workflow.dist: join() the job first")
        return self._dist

    is_main = property(lambda self: bool(lib.ct_workflow_is_main(self._live())),
                       doc="Rank 0: it reports and writes results.")

    def hold_output_dir(self, training):
        """output_dir for the rest of the run (see ct_workflow_hold_output_dir):
        CputrainError ERR_BUSY when another run holds it, ERR_INVALID_ARG
        when run_qa.py's rule refuses what it holds."""
        check(lib.ct_workflow_hold_output_dir(self._live(), 1 if training else 0))

    def check_best_metric(self, reported):
        """metric_for_best_model against the metrics the evaluation reports
        (names without eval_): CputrainError listing them when it is not one
        (see ct_workflow_check_best_metric)."""
        names = [_encode(m) for m in reported]
        c_names = (ctypes.c_char_p * max(len(names), 1))(*names)
        check(lib.ct_workflow_check_best_metric(self._live(), c_names, len(names)))

    def progress(self, what, done, total):
        lib.ct_workflow_progress(self._live(), _encode(what), int(done), int(total))

    def save_metrics(self, split, metrics, integers=()):
        """Trainer.save_metrics(split, metrics) on the main process: a
        {name: value} mapping; names in `integers` are written as integers."""
        names = list(metrics)
        n = len(names)
        c_names = (ctypes.c_char_p * max(n, 1))(*[_encode(k) for k in names])
        values = (ctypes.c_double * max(n, 1))(*[float(metrics[k]) for k in names])
        is_int = (ctypes.c_int * max(n, 1))(*[1 if k in integers else 0 for k in names])
        check(lib.ct_workflow_save_metrics(self._live(), _encode(split), c_names, values,
                                           is_int, n))

    def write_model_card(self, trainer, task, base, fine_tuned, dataset, dataset_is_named,
                         metrics=None):
        """Trainer.create_model_card on the main process (see
        ct_workflow_write_model_card); metrics: the evaluation's, or None."""
        metrics = dict(metrics or {})
        names = list(metrics)
        n = len(names)
        c_names = (ctypes.c_char_p * max(n, 1))(*[_encode(k) for k in names])
        values = (ctypes.c_double * max(n, 1))(*[float(metrics[k]) for k in names])
        check(lib.ct_workflow_write_model_card(
            self._live(), trainer._live(), _encode(task), _encode(base or ""),
            1 if fine_tuned else 0, _encode(dataset or ""), 1 if dataset_is_named else 0,
            c_names, values, n))

    def __reduce__(self):
        raise TypeError("a Workflow cannot be pickled")

    def __repr__(self):
        if not self._handle:
            return "<closed Workflow>"
        return "<Workflow %s>" % ("joined" if self._dist is not None else "not joined")
