"""python3 -m cputrain.run_qa: Transformers' run_qa.py through the library,
the job of tools/cputrain-qa from Python -- fine-tune a BERT model for
extractive question answering on SQuAD-format data, evaluate with the
official EM/F1, predict on a test set, write the result files (eval_ and
predict_ predictions, <split>_results.json, all_results.json).

    python3 -m cputrain.run_qa --config_name data/config.json --tokenizer_name data \\
        --train_file data/train.json --validation_file data/validation.json \\
        --do_train --do_eval --output_dir out [TrainingArguments...]

run_qa.py's model and data arguments are read here (argparse); everything
else is a TrainingArguments field, parsed by the library (TrainingArgs).
Started by mpirun, torchrun or a PyTorchJob, each process is one rank of a
data-parallel job (--ddp_backend, --ddp_timeout), as tools/cputrain-qa."""

import argparse
import os
import signal
import sys
import threading

from . import (LOG_TO_STDERR, PROGRESS_TO_TERMINAL, ArgFate, ArgType, CputrainError,
               LogLevel, Model, Placement, Precision, QAFeatures, SquadExamples, SquadScores,
               Status, Table, Tokenizer, Trainer, TrainingArgs, Workflow, __version__,
               dataset_file, hub_download, model_folder,
               set_log_callback, set_log_level)

PROG = "python3 -m cputrain.run_qa"

# run_qa.py's arguments that change nothing here, or are refused, with the
# reason: the library's one table (the same rows cputrain-qa reads).
RUN_QA_FATES = tuple(k for k in TrainingArgs.known_arguments()
                     if k.group in ("ModelArguments", "DataTrainingArguments")
                     and k.fate != ArgFate.IMPLEMENTED)


def _bool(text):
    """HfArgumentParser's string_to_bool."""
    if isinstance(text, bool):
        return text
    if text.lower() in ("yes", "true", "t", "y", "1"):
        return True
    if text.lower() in ("no", "false", "f", "n", "0"):
        return False
    raise argparse.ArgumentTypeError("truthy value expected: got %r" % text)


def parser():
    p = argparse.ArgumentParser(
        prog=PROG, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Fine-tune and evaluate a BERT model for extractive question answering "
                    "(run_qa.py through libcputrain).",
        epilog="TrainingArguments (parsed by the library):\n" + TrainingArgs.help())
    qa = p.add_argument_group("question answering arguments")
    add = qa.add_argument
    add("--model_name_or_path", help="Local folder or Hub id of a pre-trained model "
        "(config.json, weights, vocab.txt), or a built-in configuration name.")
    add("--config_name", help="config.json (a file, a folder holding one, a Hub id or a "
        "built-in name) to start from instead; no weights.")
    add("--tokenizer_name", help="Folder, Hub id or vocab.txt of the tokenizer, if not the "
        "model's.")
    add("--cache_dir", help="Hub cache of downloaded models (default $HF_HUB_CACHE, else "
        "~/.cache/huggingface/hub).")
    add("--model_revision", default=None, help="Branch, tag or commit of a Hub model (main).")
    add("--token", help="Hub token for gated or private models (default $HF_TOKEN, else "
        "huggingface-cli login's).")
    add("--dataset_name", help="squad or squad_v2 (or a Hub dataset of SQuAD's columns): from "
        "the datasets cache, the Hub cache or the Hub.")
    add("--dataset_config_name", help="The dataset's configuration, when it has several.")
    add("--dataset_dir", help="Read --dataset_name from this folder's JSON files instead.")
    add("--train_file", help="Training data: SQuAD JSON or JSON lines.")
    add("--validation_file", help="Evaluation data: SQuAD JSON or JSON lines.")
    add("--test_file", help="Data to predict on (--do_predict): SQuAD JSON or JSON lines.")
    add("--max_seq_length", type=int, default=384,
        help="Tokens per window: question + context (default 384).")
    add("--doc_stride", type=int, default=128,
        help="Overlap in tokens between context windows (default 128).")
    add("--max_train_samples", type=int, default=None,
        help="Use only the first N training examples.")
    add("--max_eval_samples", type=int, default=None,
        help="Use only the first N evaluation examples.")
    add("--max_predict_samples", type=int, default=None,
        help="Use only the first N test examples.")
    add("--n_best_size", type=int, default=20,
        help="Candidate answers kept per question (default 20).")
    add("--max_answer_length", type=int, default=30,
        help="Longest answer in tokens (default 30).")
    add("--version_2_with_negative", type=_bool, nargs="?", const=True, default=False,
        help="Some questions have no answer (SQuAD v2.0).")
    add("--null_score_diff_threshold", type=float, default=0.0,
        help="Predict no answer when its score beats the best span by more than this "
             "(default 0.0).")
    other = p.add_argument_group("run_qa.py arguments with no effect here (a warning says why)")
    for k in RUN_QA_FATES:
        if k.type == ArgType.BOOL:
            other.add_argument("--" + k.name, nargs="?", const="True", default=None,
                               help="%s: %s." % ("No effect" if k.fate == ArgFate.NO_EFFECT
                                                 else "Refused", k.reason))
        else:
            other.add_argument("--" + k.name, default=None,
                               help="%s: %s." % ("No effect" if k.fate == ArgFate.NO_EFFECT
                                                 else "Refused", k.reason))
    p.add_argument("--version", action="version",
                   version="%s (libcputrain %s)" % (PROG, __version__))
    return p


def apply_fates(o, args):
    """run_qa.py's no-effect arguments warn (the library says why); a refused
    one raises CputrainError with the reason."""
    for k in RUN_QA_FATES:
        value = getattr(o, k.name)
        if value is not None:
            args.set(k.name, value)


def resolve_hub(o):
    """--model_name_or_path and --tokenizer_name that name no local path but a
    Hub id, replaced by their snapshot folders in the Hub cache (fetched when
    missing), as from_pretrained looks: local folder, cache, Hub; and
    --config_name by the repo's config.json, as AutoConfig looks. A name the
    Hub does not have (or lets no one see) is kept, and the reason returned:
    it may be a built-in configuration. Other failures raise."""
    miss = None
    options = dict(cache_dir=o.cache_dir, revision=o.model_revision, token=o.token)
    for attr in ("model_name_or_path", "config_name", "tokenizer_name"):
        name = getattr(o, attr)
        if not name or os.path.exists(name):
            continue
        try:
            setattr(o, attr, hub_download(name, "config.json", **options)
                    if attr == "config_name" else model_folder(name, **options))
        except CputrainError as e:
            if e.status not in (Status.ERR_NOT_FOUND, Status.ERR_ACCESS):
                raise
            miss = e.message
    return miss


def not_local(option, name, wanted, miss):
    """The message for a --model_name_or_path / --config_name /
    --tokenizer_name that is not a folder with `wanted` (miss: why the Hub
    did not give it)."""
    if os.path.isdir(name):
        return "--%s %s: the folder has no %s" % (option, name, wanted)
    if miss:
        return "--%s %s: %s" % (option, name, miss)
    return "--%s %s: no such file or folder" % (option, name)


def make_model(o, args, rank, miss):
    """A folder's weights, else a configuration with fresh weights; a name
    the Hub did not give that is a built-in configuration gets a loud word
    about its random weights. (model, None) or (None, message)."""
    src = o.config_name or o.model_name_or_path
    option = "config_name" if o.config_name else "model_name_or_path"
    if o.model_name_or_path and os.path.isfile(os.path.join(o.model_name_or_path, "config.json")):
        return Model.load(o.model_name_or_path, "question-answering", seed=args.seed), None
    if os.path.isfile(src):
        return Model.create(src, "question-answering", seed=args.seed), None
    if o.config_name and os.path.isfile(os.path.join(src, "config.json")):
        # --config_name as a folder, as AutoConfig takes it
        return Model.create(os.path.join(src, "config.json"), "question-answering",
                            seed=args.seed), None
    if not os.path.exists(src) and (o.config_name or miss):
        try:
            model = Model.create(src, "question-answering", seed=args.seed)
        except CputrainError:
            return None, not_local(option, src, "config.json", miss)
        if not o.config_name and rank == 0:
            print("%s: WARNING: --model_name_or_path %s: the Hub did not give it (%s). Using "
                  "the library's built-in configuration of that name with RANDOM weights, so "
                  "this run does not fine-tune the pre-trained model. To do that, run once "
                  "with network access (or HF_ENDPOINT set to a mirror), or pass a local "
                  "folder." % (PROG, src, miss), file=sys.stderr)
        return model, None
    return None, not_local(option, src, "config.json", miss)


class Bar:
    """A progress callback (done, total) drawing the workflow's bar named
    `what`, as datasets.map and Trainer's loop draw theirs."""

    def __init__(self, what, workflow):
        self.what, self.workflow = what, workflow

    def __call__(self, done, total):
        self.workflow.progress(self.what, done, total)


class DatasetSplit:
    """--dataset_name's split, as datasets.load_dataset finds it (the
    datasets cache, the Hub cache, the Hub)."""

    def __init__(self, o, split):
        self.o, self.split = o, split

    def __str__(self):
        return "dataset %s, split %s" % (self.o.dataset_name, self.split)

    def examples(self):
        with Table.load_dataset(self.o.dataset_name, self.o.dataset_config_name, self.split,
                                cache_dir=self.o.cache_dir, token=self.o.token) as table:
            return SquadExamples.from_table(table, str(self))


def find_split(o, split):
    """--dataset_name: with --dataset_dir, the split's file in that folder
    under the names the datasets library and the SQuAD site use (SQuAD
    publishes no test set: a test split is only test.json(l)); else the
    dataset's split."""
    if not o.dataset_dir:
        return DatasetSplit(o, split)
    v2 = o.dataset_name == "squad_v2"
    official = {"train": "train-v2.0.json" if v2 else "train-v1.1.json",
                "validation": "dev-v2.0.json" if v2 else "dev-v1.1.json"}.get(split)
    try:
        return dataset_file(o.dataset_dir, o.dataset_name, split, official)
    except CputrainError as e:
        if official is None:
            raise SystemExit("%s: --do_predict requires a test dataset: %s; pass --test_file"
                             % (PROG, e.message))
        raise SystemExit("%s: %s -- put the files there or pass --train_file / "
                         "--validation_file" % (PROG, e.message))


class QARun:
    """What evaluation needs: the model, the evaluation examples and
    features, the job (each rank computes one block of the logits), and the
    last predictions and scores."""

    def __init__(self, o, args, model, examples, features, workflow):
        self.o, self.args, self.model = o, args, model
        self.examples, self.features = examples, features
        self.workflow, self.dist = workflow, workflow.dist
        self.preds = None

    def _logits(self):
        n, world, rank = len(self.features), self.dist.world_size, self.dist.rank
        block = -(-n // world)
        mine = range(min(rank * block, n), min(rank * block + block, n))
        start, end = self.features.logits(self.model,
                                          batch_size=self.args.per_device_eval_batch_size,
                                          rows=mine,
                                          progress=Bar("Evaluation", self.workflow))
        if world > 1:
            row = 4 * self.features.seq_len
            for logits in (start, end):
                data = memoryview(logits).cast("B")
                piece = bytearray(block * row)
                piece[:len(mine) * row] = data[mine.start * row:mine.stop * row]
                data[:] = b"".join(self.dist.allgather(piece))[:n * row]
        return start, end

    def evaluate(self, score=True):
        """Logits of every evaluation feature, utils_qa.py's
        post-processing, then the SQuAD metric: a SquadScores (None
        without score)."""
        # bf16_full_eval: bf16 products even after fp32 training (or none);
        # otherwise the training precision, as Trainer's autocast
        was = self.model.precision
        self.model.precision = (Precision.BF16 if self.args.bf16 or self.args.bf16_full_eval
                                else Precision.FP32)
        try:
            start, end = self._logits()
        finally:
            self.model.precision = was
        if self.preds is not None:
            self.preds.close()
        self.preds = self.features.postprocess(
            start, end, version_2_with_negative=self.o.version_2_with_negative,
            n_best_size=self.o.n_best_size, max_answer_length=self.o.max_answer_length,
            null_score_diff_threshold=self.o.null_score_diff_threshold)
        if not score:
            return None
        return SquadScores.compute(self.preds, self.examples, self.o.version_2_with_negative)

    def eval_callback(self, trainer):
        """The trainer's evaluation hook: EM/F1 as eval_* metrics."""
        with self.evaluate() as scores:
            return {"eval_" + name: value for name, value in scores.items()}


def predict(run, output_dir, rank):
    """run_qa.py's do_predict: predict_predictions.json and the n-best (and
    null odds under v2); with reference answers, the SQuAD metric prefixed
    "test_" (QuestionAnsweringTrainer.predict's metric_key_prefix) and
    predict_samples into predict_results.json and all_results.json."""
    n = run.features.n_examples
    answered = any(run.examples.answer_list(i) for i in range(n))
    scores = run.evaluate(score=answered)
    if rank != 0:
        return
    run.preds.save(output_dir, "predict")
    print("prediction: %d examples, %d features: %s" % (
        n, len(run.features), os.path.join(output_dir, "predict_predictions.json")))
    if scores is None:
        print("prediction: the test set has no reference answers, so no metrics")
        return
    with scores:
        scores.add_prefix("test")
        scores.set("predict_samples", len(run.features), integer=True)
        print("***** predict metrics *****")
        for name, value in scores.items():
            print("  %-24s = %g" % (name, value))
        scores.save_metrics(output_dir, "predict")


def write_model_card(o, workflow, train_file, from_folder, scores, trainer):
    """run_qa.py ends with trainer.create_model_card(): what the model came
    from and was trained on, and the evaluation's metrics if it ran."""
    base = o.model_name_or_path if from_folder or not o.config_name else o.config_name
    workflow.write_model_card(trainer, "extractive question answering", base, from_folder,
                              o.dataset_name or train_file, bool(o.dataset_name),
                              dict(scores.items()) if scores is not None else None)


def _last_epoch(trainer):
    for entry in reversed(trainer.log_history):
        if "epoch" in entry:
            return float(entry["epoch"])
    return 0.0


V1_METRICS = ("exact_match", "f1")
V2_METRICS = ("exact", "f1", "total", "HasAns_exact", "HasAns_f1", "HasAns_total", "NoAns_exact",
              "NoAns_f1", "NoAns_total", "best_exact", "best_exact_thresh", "best_f1",
              "best_f1_thresh")


_terminated = []


def _sigterm_as_interrupt(signum, frame):
    if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, None):
        # no Python SIGINT path to take (nohup, `cmd &`): the default end
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.raise_signal(signal.SIGTERM)
        return
    _terminated.append(signum)
    signal.raise_signal(signal.SIGINT)


def main(argv=None):
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    else:
        previous = None
    try:
        return _main(argv)
    except KeyboardInterrupt as e:
        name = "SIGTERM" if _terminated else "SIGINT"
        print("%s: %s: %s" % (PROG, name, e or "interrupted (nothing to save: no training "
                              "running)"), file=sys.stderr)
        return 143 if _terminated else 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main(argv):
    argv = sys.argv[1:] if argv is None else list(argv)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)  # whole lines, in order with stderr
    set_log_callback(LOG_TO_STDERR)
    # warnings only until this process knows its rank (apply_log_levels)
    set_log_level(LogLevel.WARNING)
    args = TrainingArgs()
    # the script's own names too, so that a prefix means what argparse
    # would make of it across both (HfArgumentParser's single parser)
    own = [o[2:] for a in parser()._actions for o in a.option_strings if o.startswith("--")]
    try:
        rest = args.parse(argv, own_names=own)
    except CputrainError as e:
        print("%s: arguments: %s" % (PROG, e), file=sys.stderr)
        return 2
    o = parser().parse_args(rest)  # exits 2 on an unknown argument, 0 after --help
    try:
        apply_fates(o, args)
    except CputrainError as e:
        print("%s: arguments: %s" % (PROG, e), file=sys.stderr)
        return 2
    if args.eval_strategy != "no" and not args.do_eval:
        args.do_eval = True  # TrainingArguments' rule, known before any work

    if o.dataset_name == "squad_v2":
        o.version_2_with_negative = True
    if o.dataset_dir and o.dataset_name and o.dataset_name not in ("squad", "squad_v2"):
        print("%s: --dataset_name '%s' with --dataset_dir: only squad and squad_v2 have known "
              "file names" % (PROG, o.dataset_name), file=sys.stderr)
        return 2
    do_train, do_eval, output_dir = args.do_train, args.do_eval, args.output_dir
    do_predict = args.do_predict
    train_file, eval_file, test_file = o.train_file, o.validation_file, o.test_file
    if o.dataset_name and not train_file and do_train:
        train_file = find_split(o, "train")
    if o.dataset_name and not eval_file and do_eval:
        eval_file = find_split(o, "validation")
    if o.dataset_name and not test_file and do_predict:
        test_file = find_split(o, "test")
    if do_predict and not test_file:
        print("%s: --do_predict requires a test dataset: --test_file or --dataset_name with a "
              "test split" % PROG, file=sys.stderr)
        return 2
    for wanted, path, flag in ((do_train, train_file, "--do_train needs --train_file"),
                               (do_eval, eval_file, "--do_eval needs --validation_file")):
        if wanted and not path:
            print("%s: %s or --dataset_name" % (PROG, flag), file=sys.stderr)
            return 2
    if not o.model_name_or_path and not o.config_name:
        print("%s: give --model_name_or_path (or --config_name to start from scratch)" % PROG,
              file=sys.stderr)
        return 2
    if not output_dir:
        print("%s: --output_dir is required" % PROG, file=sys.stderr)
        return 2
    workflow = Workflow("run_qa.py", args)
    if do_train:
        try:
            workflow.check_best_metric(V2_METRICS if o.version_2_with_negative else V1_METRICS)
        except CputrainError as e:
            print("%s: %s" % (PROG, e.message), file=sys.stderr)
            return 2
    tokenizer_path = o.tokenizer_name or o.model_name_or_path
    if not tokenizer_path:
        print("%s: --tokenizer_name is needed with --config_name" % PROG, file=sys.stderr)
        return 2
    max_train = -1 if o.max_train_samples is None else o.max_train_samples
    max_eval = -1 if o.max_eval_samples is None else o.max_eval_samples
    max_predict = -1 if o.max_predict_samples is None else o.max_predict_samples

    what = "distributed setup"
    try:
        # Which process of the job this is (only rank 0 reports and writes),
        # and its log level.
        dist = workflow.join()
        rank = dist.rank
        # output_dir is this run's from before its first file to after its
        # last, and run_qa.py's rule for what is already there is read under
        # the lock (a refusal by that rule is a usage error).
        what = "output_dir"
        try:
            workflow.hold_output_dir(do_train)
        except CputrainError as e:
            print("%s: %s: %s: %s" % (PROG, what, e.status_name, e.message), file=sys.stderr)
            return 2 if e.status == Status.ERR_INVALID_ARG else 1
        what = "Hub"
        miss = resolve_hub(o)
        tokenizer_path = o.tokenizer_name or o.model_name_or_path
        what = "model"
        # Model: pre-trained weights from a folder, else a fresh one.
        from_folder = bool(o.model_name_or_path) and os.path.isfile(
            os.path.join(o.model_name_or_path, "config.json"))
        model, refused = make_model(o, args, rank, miss)
        if refused:
            print("%s: %s" % (PROG, refused), file=sys.stderr)
            return 2
        # This rank's share of the machine, one pinned thread per core.
        what = "placement"
        with Placement(dist.local_rank, dist.local_world_size) as placement:
            model.set_placement(placement)  # the library logs it, once
        what = "tokenizer"
        if not (os.path.isfile(tokenizer_path) or
                os.path.isfile(os.path.join(tokenizer_path, "vocab.txt"))):
            print("%s: %s" % (PROG, not_local("tokenizer_name" if o.tokenizer_name else
                                              "model_name_or_path", tokenizer_path,
                                              "vocab.txt", miss)), file=sys.stderr)
            return 2
        tokenizer = Tokenizer(tokenizer_path)
        vocab = model.config_int("vocab_size")
        if len(tokenizer) > vocab:
            print("%s: the tokenizer has %d tokens but the model's embedding only %d "
                  "(vocab_size): ids from %d up would fall outside it. Use the model's own "
                  "tokenizer (--tokenizer_name), or a configuration whose vocab_size is at "
                  "least %d" % (PROG, len(tokenizer), vocab, vocab, len(tokenizer)),
                  file=sys.stderr)
            return 2
        # run_qa.py clamps max_seq_length to what the model takes, up front
        limit = model.config_int("max_position_embeddings")
        if tokenizer.model_max_length is not None and tokenizer.model_max_length > 0:
            limit = min(limit, tokenizer.model_max_length)
        if o.max_seq_length > limit:
            if rank == 0:
                print("%s: warning: the max_seq_length passed (%d) is larger than the maximum "
                      "length for the model (%d). Using max_seq_length=%d."
                      % (PROG, o.max_seq_length, limit, limit), file=sys.stderr)
            o.max_seq_length = limit
        if o.doc_stride >= o.max_seq_length:
            print("%s: --doc_stride %d must be below max_seq_length (%d)"
                  % (PROG, o.doc_stride, o.max_seq_length), file=sys.stderr)
            return 2

        def featurize(path, limit, dataset, label):
            """One file's examples and features (the progress bar named as
            run_qa.py's), reported on rank 0 as "label: N examples, M
            features"."""
            examples = path.examples() if isinstance(path, DatasetSplit) else \
                SquadExamples.load(path)
            features = QAFeatures.create(tokenizer, examples, o.max_seq_length, o.doc_stride,
                                         limit, progress=Bar("Running tokenizer on %s dataset"
                                                             % dataset, workflow))
            if rank == 0:
                print("%s: %d examples, %d features"
                      % (label, features.n_examples, len(features)))
            return examples, features

        run = None
        if do_eval:
            what = eval_file
            examples, features = featurize(eval_file, max_eval, "validation", "evaluation")
            run = QARun(o, args, model, examples, features, workflow)
        test_run = None
        if do_predict:
            what = test_file
            examples, features = featurize(test_file, max_predict, "prediction", "prediction")
            test_run = QARun(o, args, model, examples, features, workflow)
        trainer = None
        if do_train:
            what = train_file
            _, train_features = featurize(train_file, max_train, "train", "training")
            what = "training"
            trainer = Trainer(model, args, train_dataset=train_features.dataset,
                              progress=PROGRESS_TO_TERMINAL if rank == 0 else None,
                              evaluate=run.eval_callback if run is not None else None,
                              dist=dist, tokenizer=tokenizer)  # saved with the model, as run_qa.py
            trainer.train()
        if do_eval:
            what = "evaluation"
            epoch = _last_epoch(trainer) if trainer is not None else None
            scores = run.evaluate()
            scores.add_prefix("eval")
            scores.set("eval_samples", len(run.features), integer=True)
            if epoch is not None:
                scores.set("epoch", epoch, integer=False)
            if rank == 0:
                print("***** eval metrics *****")
                for name, value in scores.items():
                    print("  %-24s = %g" % (name, value))
                what = "writing results"
                scores.save_metrics(output_dir, "eval")
                run.preds.save(output_dir, "eval")
        else:
            scores = None
        if do_predict:
            what = "prediction"
            predict(test_run, output_dir, rank)
        # run_qa.py ends with trainer.create_model_card(); written here for
        # a trained model only, so an evaluation never replaces a model's card.
        if trainer is not None and rank == 0:
            what = "writing the model card"
            write_model_card(o, workflow, train_file, from_folder, scores, trainer)
    except CputrainError as e:
        print("%s: %s: %s: %s" % (PROG, what, e.status_name, e.message), file=sys.stderr)
        return 1
    finally:
        workflow.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
