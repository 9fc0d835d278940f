"""Python bindings for libcputrain (pure ctypes).

    import cputrain
    args = cputrain.TrainingArgs()
    rest = args.parse(["--bf16", "--learning_rate", "3e-5", "--output_dir", "out"])
    model = cputrain.Model.create("bert-base-uncased", task="question-answering")
    loss = model.forward_backward(input_ids, attention_mask=mask,
                                  start_positions=starts, end_positions=ends)
    data = cputrain.Dataset.from_arrays("question-answering", ids, positions)
    trainer = cputrain.Trainer(model, args, train_dataset=data,
                               progress=lambda event, step, max_steps, epoch, log: False)
    trainer.train()

The shared library is found through CPUTRAIN_LIBRARY, else the LIBDIR of
the `make install` that installed this package (or this source tree's
build/), else the system; its major version must be the one this package
was written for (checked at import).
"""

from ._lib import API_MAJOR, library_path, lib as _c
from ._errors import CputrainError, Status
from ._log import (LOG_TO_STDERR, LogLevel, get_log_level, log_to_python_logging,
                   set_log_callback, set_log_level)
from ._args import ArgFate, ArgType, Field, KnownArgument, TrainingArgs
from ._model import Batch, DType, Model, Precision, Task, TensorInfo
from ._placement import Placement
from ._dist import Dist, Rendezvous
from ._train import (PROGRESS_TO_TERMINAL, DataCollatorForLanguageModeling,
                     DataCollatorForWholeWordMask, Dataset, EarlyStoppingCallback, EvalPrediction,
                     Event, Optimizer, Trainer, TrainOutput)
from ._output_lock import OutputLock
from ._trainer_state import TrainerState
from ._profile import kernel_peak, profile, reset_profile, set_profile_enabled
from ._workflow import Workflow, dataset_file
from ._tokenizer import BatchEncoding, Option as TokenizerOption, Tokenizer, Truncation
from . import metrics
from ._table import Table
from ._hub import hub_download, model_folder
from ._squad import (Predictions, QAFeatures, SquadExamples, SquadScores, postprocess,
                     squad_score)

# The version of the library actually loaded, which is what runs.
__version__ = _c.ct_version_string().decode()


def kernel_isa():
    """The kernel level this process runs: "generic", "avx2", "avx512", "avx512bf16"
    or "amx" (the best the CPU supports, or CPUTRAIN_ISA's supported choice)."""
    return _c.ct_kernel_isa().decode()


__all__ = [
    "API_MAJOR", "ArgFate", "ArgType", "KnownArgument", "Batch", "CputrainError", "DType", "Dataset", "Event", "Field",
    "LOG_TO_STDERR", "LogLevel", "Model", "Optimizer", "PROGRESS_TO_TERMINAL", "Precision",
    "Status", "Task", "TensorInfo", "Tokenizer", "TokenizerOption", "TrainOutput", "Trainer",
    "TrainingArgs", "Truncation", "__version__",
    "get_log_level", "kernel_isa", "library_path", "log_to_python_logging", "set_log_callback",
    "set_log_level",
    "Predictions", "QAFeatures", "SquadExamples", "SquadScores", "postprocess", "squad_score",
    "Placement", "Dist", "Rendezvous", "OutputLock", "TrainerState",
    "hub_download", "model_folder", "kernel_peak", "profile", "reset_profile", "set_profile_enabled", "Workflow", "dataset_file",
    "BatchEncoding", "DataCollatorForLanguageModeling", "DataCollatorForWholeWordMask",
    "EarlyStoppingCallback", "EvalPrediction", "Table", "metrics",
]
