"""Dataset and Trainer, the binding itself: a tiny training run driven from
Python with progress and evaluation callbacks written in Python, stopping
from a callback, exceptions raised inside callbacks, the files a run
leaves, and resuming from a checkpoint to the same final parameters as an
uninterrupted run. The optimizer's numbers are checked against PyTorch in
test_optim_torch.py; here only what the binding adds."""

import json
import os
import subprocess
import sys
import textwrap
import unittest
from unittest import mock

import cputrain
from cputrain import (Batch, CputrainError, Dataset, Event, Model, Optimizer, Status, Task,
                      Trainer, TrainingArgs, TrainOutput)
from cputrain import _train

import helpers
from helpers import N, T, needs_numpy, np, params_bytes, qa_dataset, qa_examples

# N = 24 examples; batch 4 with accumulation 2: 3 optimizer steps per epoch


class TempDirTest(helpers.TempDirTest):

    prefix = "cputrain-train-"

    def args(self, **kw):
        fields = dict(output_dir=os.path.join(self.dir, "out"), per_device_train_batch_size=4,
                      gradient_accumulation_steps=2, num_train_epochs=2.0, learning_rate=1e-3,
                      logging_steps=2, save_steps=3, seed=11)
        fields.update(kw)
        return TrainingArgs(**fields)


class DatasetTest(unittest.TestCase):

    def test_add_and_len(self):
        with Dataset("question-answering", seq_len=6) as ds:
            self.assertEqual((len(ds), ds.seq_len, ds.task), (0, 6, Task.QUESTION_ANSWERING))
            ds.add([2, 17, 33, 5, 9, 3], (1, 3))
            ds.add([2, 41, 8, 3, 0, 0], [2, 2], token_type_ids=[0, 0, 1, 1, 0, 0],
                   attention_mask=[1, 1, 1, 1, 0, 0])
            self.assertEqual(len(ds), 2)
            self.assertEqual(repr(ds), "<Dataset question_answering, 2 examples of 6 tokens>")
            self.assertEqual(list(ds.lengths()), [6, 4])
            self.assertEqual(list(ds.lengths(1)), [4])
            self.assertEqual(list(ds.lengths(1, 1)), [])
            with self.assertRaises(IndexError):
                ds.lengths(0, 3)
        with Dataset("text-classification", 4) as ds:
            ds.add([1, 2, 3, 4], 1)
            ds.add([1, 2, 3, 4], [0])
            self.assertEqual(len(ds), 2)
        with Dataset(Task.MASKED_LM, 3) as ds:
            ds.add([5, 6, 7], [-100, 6, -100])
            self.assertEqual(ds.labels_per_example, 3)

    def test_bulk(self):
        ids, positions = qa_examples(10)
        with Dataset.from_arrays("question-answering", ids, positions) as ds:
            self.assertEqual((len(ds), ds.seq_len), (10, T))
            ds.extend(ids[:3], positions[:3], token_type_ids=[[0] * T] * 3)
            self.assertEqual(len(ds), 13)

    @needs_numpy
    def test_bulk_from_numpy_matches_one_by_one(self):
        rng = np.random.default_rng(1)
        ids = rng.integers(1, 128, size=(9, 8))  # int64: converted, range-checked
        mask = np.ones((9, 8), np.int32)
        mask[:, 6:] = 0
        labels = rng.integers(0, 2, size=9)
        bulk = Dataset.from_arrays("sequence-classification", ids, labels, attention_mask=mask)
        single = Dataset("sequence-classification", 8)
        for i in range(9):
            single.add(ids[i], int(labels[i]), attention_mask=mask[i])
        with Model.create("bert-test", task="sequence-classification") as m:
            m.training = False
            a = m.forward(bulk.batch(range(9)))
            b = m.forward(single.batch(range(9)))
            c = m.forward(ids, attention_mask=mask, labels=labels)
            self.assertEqual(a, b)
            self.assertEqual(a, c)
        # A Fortran-ordered or strided view is copied into row order first.
        strided = np.asfortranarray(ids)
        with Dataset.from_arrays("sequence-classification", strided, labels) as ds2:
            with Model.create("bert-test", task="sequence-classification") as m:
                m.training = False
                self.assertEqual(m.forward(ds2.batch(range(9))),
                                 m.forward(ids, labels=labels))

    def test_batch(self):
        with qa_dataset(6) as ds:
            batch = ds.batch([5, 0, 2])
            self.assertIsInstance(batch, Batch)
            self.assertEqual(batch.shape, (3, T))
            self.assertTrue(batch.has_labels)
            again = ds.batch([1], batch=batch)
            self.assertIs(again, batch)
            self.assertEqual(batch.shape, (1, T))
            with self.assertRaisesRegex(IndexError, "index 6 outside the dataset's 6 examples"):
                ds.batch([6])
            with self.assertRaisesRegex(ValueError, "at least one index"):
                ds.batch([])

    def test_shapes_are_checked_before_anything_is_added(self):
        with Dataset("question-answering", 4) as ds:
            cases = [
                (ValueError, "add\\(\\) takes one example of 4 tokens", lambda: ds.add([1, 2, 3], (0, 1))),
                (ValueError, "labels has shape \\(3,\\); 1 question_answering example needs 2 labels",
                 lambda: ds.add([1, 2, 3, 4], (0, 1, 2))),
                (ValueError, "labels has shape \\(1,\\)", lambda: ds.add([1, 2, 3, 4], 1)),
                (ValueError, "attention_mask has shape \\(3,\\)",
                 lambda: ds.add([1, 2, 3, 4], (0, 1), attention_mask=[1, 1, 1])),
                (ValueError, "the dataset's examples are 4 tokens",
                 lambda: ds.extend([[1, 2, 3, 4, 5]] * 2, [[0, 1]] * 2)),
                (ValueError, "labels has shape \\(2, 1\\)",
                 lambda: ds.extend([[1, 2, 3, 4]] * 2, [[0], [1]])),
                (TypeError, "input_ids must hold integers", lambda: ds.add([1.5] * 4, (0, 1))),
                (OverflowError, "does not fit in int32", lambda: ds.add([1 << 40] * 4, (0, 1))),
            ]
            for error, pattern, call in cases:
                with self.subTest(pattern=pattern):
                    with self.assertRaisesRegex(error, pattern):
                        call()
            self.assertEqual(len(ds), 0)
        with self.assertRaisesRegex(ValueError, "unknown task"):
            Dataset("translation", 4)
        with self.assertRaisesRegex(ValueError, "seq_len must be positive"):
            Dataset("question-answering", 0)
        with self.assertRaisesRegex(TypeError, "seq_len must be an int"):
            Dataset("question-answering", 4.0)

    def test_close(self):
        ds = Dataset("question-answering", 4)
        ds.close()
        ds.close()
        self.assertEqual(repr(ds), "<closed Dataset>")
        with self.assertRaisesRegex(ValueError, "closed Dataset"):
            len(ds)


class TrainerRunTest(TempDirTest):

    def test_events_logs_metrics_and_files(self):
        events = []

        def progress(event, step, max_steps, epoch, log):
            events.append((event, step, max_steps, epoch, log))

        eval_ds = qa_dataset(8, seed=3)

        def evaluate(trainer):
            trainer.report_metric("eval_loss", trainer.evaluate_loss(eval_ds))
            return {"eval_answer": 42}  # a returned dict is reported too

        model = Model.create("bert-test", task="question-answering", seed=1)
        ds = qa_dataset()
        with self.args(eval_strategy="steps", eval_steps=3) as args:
            trainer = Trainer(model, args, train_dataset=ds, progress=progress, evaluate=evaluate)
        self.assertIsNone(trainer.optimizer)
        out = trainer.train()

        # The order Trainer's callbacks see: 6 steps, logging every 2,
        # evaluation and checkpoint every 3 (= each epoch end), a final log.
        E = Event
        expected = [(E.TRAIN_BEGIN, 0)]
        for s in range(1, 7):
            expected.append((E.STEP_END, s))
            if s % 2 == 0:
                expected.append((E.LOG, s))
            if s % 3 == 0:
                expected += [(E.EVALUATE, s), (E.SAVE, s), (E.EPOCH_END, s)]
        expected += [(E.LOG, 6), (E.TRAIN_END, 6)]
        self.assertEqual([(e[0], e[1]) for e in events], expected)
        self.assertTrue(all(type(e[0]) is Event for e in events))
        self.assertTrue(all(e[2] == 6 for e in events), "max_steps")
        epochs = [e[3] for e in events]
        self.assertEqual(epochs, sorted(epochs))
        self.assertEqual(epochs[-1], 2.0)

        logs = [e[4] for e in events if e[0] == E.LOG]
        for log in logs[:-1]:
            for key in ("loss", "learning_rate", "epoch", "step", "grad_norm"):
                self.assertIn(key, log)
            self.assertIsInstance(log["loss"], float)
            self.assertIsInstance(log["step"], int)
        self.assertEqual([log["step"] for log in logs], [2, 4, 6, 6])
        self.assertIn("train_runtime", logs[-1])
        self.assertEqual(logs[0]["learning_rate"], 1e-3 * (6 - 2) / 6, "linear, next step's rate")
        for e in events:
            if e[0] in (E.STEP_END, E.TRAIN_BEGIN, E.EPOCH_END, E.TRAIN_END):
                self.assertIsNone(e[4])
        saves = [e[4]["checkpoint"] for e in events if e[0] == E.SAVE]
        self.assertEqual([os.path.basename(p) for p in saves], ["checkpoint-3", "checkpoint-6"])

        # Metrics from the evaluation callback land in log_history.
        history = trainer.log_history
        evals = [h for h in history if "eval_loss" in h]
        self.assertEqual([h["step"] for h in evals], [3, 6])
        self.assertTrue(all(h["eval_answer"] == 42 for h in evals))
        self.assertEqual(evals, [e[4] for e in events if e[0] == E.EVALUATE])

        # State and results.
        self.assertIsInstance(out, TrainOutput)
        self.assertEqual(out.global_step, 6)
        self.assertEqual(trainer.global_step, 6)
        self.assertEqual(trainer.max_steps, 6)
        self.assertEqual(out.training_loss, trainer.train_loss)
        self.assertGreater(trainer.train_loss, 0)
        self.assertEqual(out.metrics["train_loss"], trainer.train_loss)
        self.assertEqual(trainer.optimizer.step_count, 6)
        self.assertEqual(trainer.optimizer.lr, 0.0)
        self.assertTrue(model.training, "the model is left in training mode")

        # Files.
        out_dir = os.path.join(self.dir, "out")
        for name in ("train_results.json", "trainer_state.json", "config.json",
                     "model.safetensors", "training_args.json", "checkpoint-3", "checkpoint-6"):
            self.assertTrue(os.path.exists(os.path.join(out_dir, name)), name)
        with open(os.path.join(out_dir, "train_results.json")) as f:
            results = json.load(f)
        self.assertEqual(results["train_loss"], trainer.train_loss)
        self.assertEqual(results["train_samples"], N)
        with open(os.path.join(out_dir, "trainer_state.json")) as f:
            state = json.load(f)
        self.assertEqual(state["global_step"], 6)
        self.assertEqual(state["log_history"], history)
        for step in (3, 6):
            ckpt = os.path.join(out_dir, "checkpoint-%d" % step)
            for name in ("config.json", "model.safetensors", "optimizer.safetensors",
                         "scheduler.json", "trainer_state.json", "training_args.json",
                         "rng_state.json"):
                self.assertTrue(os.path.exists(os.path.join(ckpt, name)), (step, name))
            with open(os.path.join(ckpt, "trainer_state.json")) as f:
                self.assertEqual(json.load(f)["global_step"], step)

        # The saved model is the trained one.
        with Model.load(out_dir) as saved:
            self.assertEqual(params_bytes(saved), params_bytes(model))
        trainer.close()
        model.close()

    def test_evaluate_loss_is_the_mean_loss(self):
        with Model.create("bert-test", seed=4) as model, qa_dataset(10) as ds, \
                self.args(per_device_eval_batch_size=4) as args, Trainer(model, args) as trainer:
            loss = trainer.evaluate_loss(ds)
            model.training = False
            ids, positions = qa_examples(10)
            by_batch = [(model.forward(ids[i:i + 4], start_positions=[p[0] for p in positions[i:i + 4]],
                                       end_positions=[p[1] for p in positions[i:i + 4]]),
                         len(ids[i:i + 4])) for i in range(0, 10, 4)]
            expected = sum(l * n for l, n in by_batch) / 10
            self.assertAlmostEqual(loss, expected, places=6)
            self.assertFalse(model.training, "evaluate_loss restores the mode")
            with self.assertRaisesRegex(TypeError, "needs a cputrain.Dataset"):
                trainer.evaluate_loss(ids)
            with Dataset("masked-lm", T) as mlm:
                mlm.add(ids[0], [-100] * T)
                with self.assertRaisesRegex(ValueError, "dataset is for masked_lm, the model is "
                                                        "BertForQuestionAnswering"):
                    trainer.evaluate_loss(mlm)

    def test_needs_dataset_and_eval_callback(self):
        with Model.create("bert-test") as model, self.args() as args:
            with Trainer(model, args) as trainer:
                with self.assertRaises(CputrainError) as cm:
                    trainer.train()
                self.assertEqual(cm.exception.status, Status.ERR_STATE)
                self.assertIn("dataset", cm.exception.message)
            with self.args(eval_strategy="steps") as eval_args, \
                    Trainer(model, eval_args, train_dataset=qa_dataset()) as trainer:
                with self.assertRaises(CputrainError) as cm:
                    trainer.train()
                self.assertIn("nothing to evaluate: set an evaluation dataset", cm.exception.message)
            with Dataset("masked-lm", T) as mlm:
                with Trainer(model, args) as trainer:
                    with self.assertRaises(CputrainError) as cm:
                        trainer.train_dataset = mlm
                    self.assertIn("task", cm.exception.message)

    def test_report_metric_only_inside_evaluation(self):
        with Model.create("bert-test") as model, self.args() as args, \
                Trainer(model, args, train_dataset=qa_dataset()) as trainer:
            with self.assertRaisesRegex(RuntimeError, "inside the evaluation callback"):
                trainer.report_metric("eval_x", 1.0)

    def test_bad_callbacks(self):
        with Model.create("bert-test") as model, self.args() as args, Trainer(model, args) as t:
            with self.assertRaisesRegex(TypeError, "progress must be callable"):
                t.set_progress_callback(42)
            with self.assertRaisesRegex(TypeError, "evaluate must be callable"):
                t.set_eval_callback("no")
            with self.assertRaisesRegex(TypeError, "train_dataset must be a cputrain.Dataset"):
                t.train_dataset = [1, 2]

    def test_lifetime(self):
        model = Model.create("bert-test")
        args = self.args()
        trainer = Trainer(model, args, train_dataset=qa_dataset())
        args.close()  # the trainer has its own copy
        self.assertEqual(trainer.args.output_dir, os.path.join(self.dir, "out"))
        model.close()
        with self.assertRaisesRegex(ValueError, "Model of this Trainer was closed"):
            trainer.train()
        trainer.close()
        trainer.close()
        self.assertEqual(repr(trainer), "<closed Trainer>")
        with self.assertRaisesRegex(ValueError, "closed Trainer"):
            trainer.global_step
        with self.assertRaisesRegex(TypeError, "needs a cputrain.Model"):
            Trainer("bert-test", TrainingArgs())
        for cls in (Trainer, Dataset, Optimizer):
            self.assertIn(cls.__name__, cputrain.__all__)


class OutputLockTest(TempDirTest):

    def test_holds_output_dir_for_a_whole_run(self):
        out = os.path.join(self.dir, "a", "b")
        with cputrain.OutputLock(out) as lock:
            self.assertEqual(lock.output_dir, out)
            self.assertTrue(os.path.isfile(os.path.join(out, ".lock")))
            # a second lock of this process, and another process, are refused
            with self.assertRaises(CputrainError) as cm:
                cputrain.OutputLock(out)
            self.assertEqual(cm.exception.status, Status.ERR_BUSY)
            self.assertIn("pid %d" % os.getpid(), cm.exception.message)
            code = ("import cputrain, sys\n"
                    "try:\n    cputrain.OutputLock(sys.argv[1])\n"
                    "except cputrain.CputrainError as e:\n    print(e.status_name, e.message)\n")
            p = subprocess.run([sys.executable, "-c", code, out], stdout=subprocess.PIPE,
                               universal_newlines=True, timeout=60)
            self.assertIn("ERR_BUSY", p.stdout)
            self.assertIn("(pid %d holds" % os.getpid(), p.stdout)
            # a Trainer of this process joins the lock and writes
            with Model.create("bert-test") as model, self.args(output_dir=out) as args, \
                    Trainer(model, args, train_dataset=qa_dataset()) as trainer:
                trainer.train()
            self.assertTrue(os.path.isfile(os.path.join(out, "trainer_state.json")))
        # released: the folder is free again
        cputrain.OutputLock(out).close()
        self.assertIn("OutputLock", cputrain.__all__)


class StoppingTest(TempDirTest):

    def run_until(self, progress=None, evaluate=None, **kw):
        model = Model.create("bert-test", seed=1)
        self.addCleanup(model.close)
        args = self.args(**kw)
        self.addCleanup(args.close)
        trainer = Trainer(model, args, train_dataset=qa_dataset(), progress=progress,
                          evaluate=evaluate)
        self.addCleanup(trainer.close)
        return trainer

    def test_stop_from_the_progress_callback(self):
        trainer = self.run_until(lambda event, step, *rest: event == Event.STEP_END and step == 2)
        with self.assertRaises(CputrainError) as cm:
            trainer.train()
        self.assertEqual(cm.exception.status_name, "CT_ERR_CANCELLED")
        self.assertEqual(cm.exception.status, Status.ERR_CANCELLED)
        self.assertIn("step 2", cm.exception.message)
        self.assertEqual(trainer.global_step, 2)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "out", "train_results.json")))

    def test_exception_in_the_progress_callback_is_re_raised(self):
        seen = []

        class Boom(Exception):
            pass

        def progress(event, step, max_steps, epoch, log):
            seen.append((event, step))
            if event == Event.LOG and step == 2:
                raise Boom("from the callback")

        trainer = self.run_until(progress)
        with mock.patch("sys.unraisablehook") as hook, self.assertRaises(Boom) as cm:
            trainer.train()
        self.assertEqual(str(cm.exception), "from the callback")
        hook.assert_not_called()  # nothing escaped into ctypes
        self.assertEqual(seen[-1], (Event.LOG, 2), "training stopped right there")
        self.assertEqual(trainer.global_step, 2)
        # The trainer is usable again afterwards.
        trainer.set_progress_callback(None)
        self.assertEqual(trainer.train().global_step, 6)

    def test_keyboard_interrupt_in_a_callback_is_re_raised(self):
        def progress(event, step, *rest):
            if step == 1:
                raise KeyboardInterrupt

        trainer = self.run_until(progress)
        with self.assertRaises(KeyboardInterrupt):
            trainer.train()
        self.assertEqual(trainer.global_step, 1)

    def test_exception_in_the_eval_callback_is_re_raised(self):
        def evaluate(trainer):
            raise ZeroDivisionError("metric")

        trainer = self.run_until(evaluate=evaluate, eval_strategy="steps", eval_steps=2)
        with mock.patch("sys.unraisablehook") as hook, \
                self.assertRaisesRegex(ZeroDivisionError, "metric"):
            trainer.train()
        hook.assert_not_called()
        self.assertEqual(trainer.global_step, 2)

    def test_eval_callback_returning_nonsense(self):
        trainer = self.run_until(evaluate=lambda t: 3.5, eval_strategy="epoch")
        with self.assertRaisesRegex(TypeError, "return None or a dict of metrics"):
            trainer.train()

    def test_library_error_inside_the_eval_callback(self):
        # A CputrainError raised in the callback comes back as itself.
        bad = Dataset("question-answering", T)
        bad.add([500] * T, (0, 0))  # outside bert-test's vocabulary
        trainer = self.run_until(evaluate=lambda t: {"eval_loss": t.evaluate_loss(bad)},
                                 eval_strategy="steps", eval_steps=1)
        with self.assertRaises(CputrainError) as cm:
            trainer.train()
        self.assertEqual(cm.exception.status, Status.ERR_INVALID_ARG)
        self.assertIn("vocabulary", cm.exception.message)

    def test_train_or_close_from_inside_a_callback(self):
        holder = {}

        def progress(event, step, *rest):
            if event == Event.STEP_END:
                holder["t"].train()

        trainer = holder["t"] = self.run_until(progress)
        with self.assertRaisesRegex(RuntimeError, "inside this Trainer's own callback"):
            trainer.train()
        other = {}
        closer = other["t"] = self.run_until(lambda *a: other["t"].close())
        with self.assertRaisesRegex(RuntimeError, "closed while it is training"):
            closer.train()


class ResumeTest(TempDirTest):

    def train(self, out, progress=None, resume=None, model_seed=1, **kw):
        model = Model.create("bert-test", seed=model_seed)
        args = self.args(output_dir=os.path.join(self.dir, out), save_steps=2, logging_steps=1,
                         warmup_steps=1, lr_scheduler_type="cosine", weight_decay=0.01,
                         max_grad_norm=0.5, **kw)
        trainer = Trainer(model, args, train_dataset=qa_dataset(), progress=progress)
        args.close()
        error = None
        try:
            trainer.train(resume_from_checkpoint=resume)
        except CputrainError as e:
            error = e
        history = trainer.log_history
        result = (params_bytes(model), trainer.global_step, history, error)
        trainer.close()
        model.close()
        return result

    @staticmethod
    def steady(history):
        """log_history without the timing figures, which differ run to run."""
        timing = ("train_runtime", "train_samples_per_second", "train_steps_per_second",
                  "train_tokens_per_second")
        return [{k: v for k, v in h.items() if k not in timing} for h in history]

    def test_resume_gives_the_uninterrupted_result(self):
        full, steps, full_history, error = self.train("full")
        self.assertIsNone(error)
        self.assertEqual(steps, 6)

        def stop_after_checkpoint_4(event, step, max_steps, epoch, log):
            return event == Event.SAVE and step == 4

        part, steps, _, error = self.train("split", progress=stop_after_checkpoint_4)
        self.assertEqual(error.status, Status.ERR_CANCELLED)
        self.assertEqual(steps, 4)
        self.assertNotEqual(part, full)

        # A fresh model (other initial weights) and trainer, resumed from
        # the newest complete checkpoint: only steps 5 and 6 run, and end at
        # the same parameters.
        seen = []
        resumed, steps, history, error = self.train(
            "split", resume=True, model_seed=99,
            progress=lambda event, step, *rest: seen.append((event, step)))
        self.assertIsNone(error)
        self.assertEqual(steps, 6)
        self.assertEqual(seen[0], (Event.TRAIN_BEGIN, 4))
        self.assertEqual([s for e, s in seen if e == Event.STEP_END], [5, 6])
        self.assertEqual(resumed.keys(), full.keys())
        different = [name for name in full if resumed[name] != full[name]]
        self.assertEqual(different, [], "parameters differ after resuming")
        self.assertEqual(self.steady(history), self.steady(full_history))

        # The same from the arguments, naming a folder.
        ckpt = os.path.join(self.dir, "split", "checkpoint-4")
        again, steps, _, error = self.train("split", resume_from_checkpoint=ckpt, model_seed=7)
        self.assertIsNone(error)
        self.assertEqual(again, full)

    def test_resume_without_checkpoint(self):
        _, _, _, error = self.train("empty", resume=True)
        self.assertEqual(error.status, Status.ERR_NOT_FOUND)
        self.assertIn("no complete checkpoint", error.message)
        with self.assertRaisesRegex(TypeError, "resume_from_checkpoint must be"):
            self.train("empty", resume=3)


class TerminalProgressTest(TempDirTest):

    def test_library_progress_printer(self):
        # ct_progress_to_terminal writes log entries to the process's
        # stdout (and a bar only on a terminal): run it in a child.
        script = textwrap.dedent("""
            import sys
            sys.path.insert(0, %r)
            from helpers import qa_dataset
            from cputrain import Model, Trainer, TrainingArgs, PROGRESS_TO_TERMINAL
            model = Model.create("bert-test", seed=1)
            args = TrainingArgs(output_dir=%r, per_device_train_batch_size=4, max_steps=3,
                                logging_steps=1, save_strategy="no")
            trainer = Trainer(model, args, train_dataset=qa_dataset(),
                              progress=PROGRESS_TO_TERMINAL)
            args.close()
            trainer.train()
        """) % (os.path.dirname(os.path.abspath(__file__)), os.path.join(self.dir, "out"))
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr)
        lines = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
        self.assertEqual([line["step"] for line in lines], [1, 2, 3, 3])
        self.assertIn("loss", lines[0])
        self.assertNotIn("\r", run.stderr, "no bar when stderr is not a terminal")


class ExampleTest(TempDirTest):

    def test_train_tiny_example(self):
        # bindings/python/examples/train_tiny.py runs and learns its task.
        here = os.path.dirname(os.path.abspath(__file__))
        example = os.path.join(here, "..", "..", "bindings", "python", "examples", "train_tiny.py")
        out = os.path.join(self.dir, "tiny")
        run = subprocess.run([sys.executable, example, out], capture_output=True, text=True,
                             timeout=300)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("done: 64 steps", run.stdout)
        losses = [float(line.split("loss ")[1].split()[0]) for line in run.stdout.splitlines()
                  if line.startswith("step ") and " loss " in line]
        self.assertLess(losses[-1], losses[0] / 4, run.stdout)
        self.assertTrue(os.path.exists(os.path.join(out, "train_results.json")))


if __name__ == "__main__":
    unittest.main()
