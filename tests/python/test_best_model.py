"""load_best_model_at_end, metric_for_best_model and greater_is_better as
Transformers' Trainer has them: the best checkpoint tracked in
trainer_state.json (best_metric, best_model_checkpoint, best_global_step),
never deleted by save_total_limit, and loaded before the final save; the
argument rules of TrainingArguments.__post_init__; and trainer_state.json's
integer fields written as integers. The metrics come from a Python
evaluation callback with values chosen so that the best is not the last."""

import json
import os
import shutil
import tempfile
import unittest

from cputrain import (CputrainError, EarlyStoppingCallback, Event, Model, Status, Trainer,
                      TrainingArgs, Workflow)

from helpers import TempDirTest, qa_dataset

# 24 examples, batch 4, accumulation 2: 3 optimizer steps per epoch, 6 in all.
SCORES = {1: 0.10, 2: 0.90, 3: 0.50, 4: 0.30, 5: 0.20, 6: 0.40}  # best: step 2
LOSSES = {1: 3.0, 2: 2.0, 3: 1.5, 4: 2.5, 5: 1.8, 6: 1.6}        # lowest: step 3


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def read_json(path):
    with open(path) as f:
        return json.load(f)


class BestModelTest(TempDirTest):

    prefix = "cputrain-best-"

    def setUp(self):
        super().setUp()
        self.out = os.path.join(self.dir, "out")

    def args(self, **kw):
        fields = dict(output_dir=self.out, per_device_train_batch_size=4,
                      gradient_accumulation_steps=2, num_train_epochs=2.0, learning_rate=1e-3,
                      logging_steps=1, eval_strategy="steps", eval_steps=1,
                      save_strategy="steps", save_steps=1, seed=11)
        fields.update(kw)
        return TrainingArgs(**fields)

    def trainer(self, metrics=None, progress=None, callbacks=None, **kw):
        model = Model.create("bert-test", seed=1)
        self.addCleanup(model.close)
        args = self.args(**kw)
        self.addCleanup(args.close)
        values = metrics or {"eval_score": SCORES}

        def evaluate(trainer):
            return {name: v[trainer.global_step] for name, v in values.items()}

        trainer = Trainer(model, args, train_dataset=qa_dataset(), progress=progress,
                          evaluate=evaluate, callbacks=callbacks)
        self.addCleanup(trainer.close)
        return model, trainer

    def checkpoints(self):
        return sorted(int(n.split("-")[1]) for n in os.listdir(self.out)
                      if n.startswith("checkpoint-"))

    def test_final_model_is_the_best_checkpoint_and_rotation_keeps_it(self):
        seen = {}

        def progress(event, step, *rest):
            if event == Event.SAVE:
                seen[step] = self.checkpoints()

        model, trainer = self.trainer(progress=progress, load_best_model_at_end=True,
                                      metric_for_best_model="score", save_total_limit=2)
        trainer.train()
        best = os.path.join(self.out, "checkpoint-2")
        # At every save from step 2 on, checkpoint-2 is still there, beside
        # the newest; older non-best ones are gone.
        self.assertEqual(seen[1], [1])
        for step in range(2, 7):
            self.assertIn(2, seen[step], "save at step %d deleted the best" % step)
            self.assertIn(step, seen[step])
            self.assertLessEqual(len(seen[step]), 2)
        self.assertEqual(self.checkpoints(), [2, 6])
        final = read_bytes(os.path.join(self.out, "model.safetensors"))
        self.assertEqual(final, read_bytes(os.path.join(best, "model.safetensors")))
        self.assertNotEqual(final, read_bytes(os.path.join(self.out, "checkpoint-6",
                                                           "model.safetensors")))
        state = read_json(os.path.join(self.out, "trainer_state.json"))
        self.assertEqual(state["best_model_checkpoint"], best)
        self.assertEqual(state["best_global_step"], 2)
        self.assertAlmostEqual(state["best_metric"], 0.9)
        self.assertEqual(state["global_step"], 6)
        # The best checkpoint's own state names itself, as Trainer's does.
        own = read_json(os.path.join(best, "trainer_state.json"))
        self.assertEqual(own["best_model_checkpoint"], best)
        self.assertEqual(own["best_global_step"], 2)
        args = read_json(os.path.join(self.out, "training_args.json"))
        self.assertIs(args["greater_is_better"], True)

    def test_limit_one_keeps_only_the_best_at_the_end(self):
        seen = {}

        def progress(event, step, *rest):
            if event == Event.SAVE:
                seen[step] = self.checkpoints()

        _, trainer = self.trainer(progress=progress, load_best_model_at_end=True,
                                  metric_for_best_model="eval_score", save_total_limit=1)
        trainer.train()
        # While training: the best and the newest (Trainer raises the limit
        # to 2 while the best is not the newest); at the end the best alone.
        self.assertEqual(seen[2], [2])
        self.assertEqual(seen[4], [2, 4])
        self.assertEqual(self.checkpoints(), [2])
        self.assertEqual(read_bytes(os.path.join(self.out, "model.safetensors")),
                         read_bytes(os.path.join(self.out, "checkpoint-2", "model.safetensors")))

    def test_default_metric_is_loss_lower_is_better(self):
        _, trainer = self.trainer(metrics={"eval_loss": LOSSES}, load_best_model_at_end=True)
        trainer.train()
        state = read_json(os.path.join(self.out, "trainer_state.json"))
        self.assertEqual(state["best_global_step"], 3)
        self.assertAlmostEqual(state["best_metric"], 1.5)
        self.assertEqual(read_bytes(os.path.join(self.out, "model.safetensors")),
                         read_bytes(os.path.join(self.out, "checkpoint-3", "model.safetensors")))
        args = read_json(os.path.join(self.out, "training_args.json"))
        self.assertEqual(args["metric_for_best_model"], "loss")
        self.assertIs(args["greater_is_better"], False)

    def test_greater_is_better_false_picks_the_lowest(self):
        _, trainer = self.trainer(metric_for_best_model="score", greater_is_better=False)
        trainer.train()
        state = read_json(os.path.join(self.out, "trainer_state.json"))
        # Tracked without load_best_model_at_end too; the final model is the last.
        self.assertEqual(state["best_global_step"], 1)
        self.assertAlmostEqual(state["best_metric"], 0.1)
        self.assertNotEqual(read_bytes(os.path.join(self.out, "model.safetensors")),
                            read_bytes(os.path.join(self.out, "checkpoint-1",
                                                    "model.safetensors")))

    def test_without_a_metric_nothing_is_tracked(self):
        _, trainer = self.trainer()
        trainer.train()
        state = read_json(os.path.join(self.out, "trainer_state.json"))
        self.assertIsNone(state["best_metric"])
        self.assertIsNone(state["best_model_checkpoint"])
        self.assertIsNone(state["best_global_step"])

    def test_a_metric_not_reported_is_a_clear_error(self):
        _, trainer = self.trainer(load_best_model_at_end=True, metric_for_best_model="f1")
        with self.assertRaises(CputrainError) as cm:
            trainer.train()
        self.assertEqual(cm.exception.status, Status.ERR_INVALID_ARG)
        self.assertIn("metric_for_best_model is 'eval_f1', which is not among the evaluation "
                      "metrics (eval_score)", cm.exception.message)

    def test_resume_keeps_the_best(self):
        _, trainer = self.trainer(progress=lambda e, step, *r: e == Event.SAVE and step == 4,
                                  load_best_model_at_end=True, metric_for_best_model="score")
        with self.assertRaises(CputrainError):
            trainer.train()
        # Resumed with output_dir spelled otherwise and a limit of 1: the
        # best is recognised as the same folder, kept and loaded.
        _, trainer = self.trainer(load_best_model_at_end=True, metric_for_best_model="score",
                                  resume_from_checkpoint="true", save_total_limit=1,
                                  output_dir=os.path.join(self.dir, ".", "out"))
        trainer.train()
        state = read_json(os.path.join(self.out, "trainer_state.json"))
        self.assertEqual(os.path.normpath(state["best_model_checkpoint"]),
                         os.path.join(self.out, "checkpoint-2"))
        self.assertEqual(self.checkpoints(), [2])
        self.assertEqual(read_bytes(os.path.join(self.out, "model.safetensors")),
                         read_bytes(os.path.join(self.out, "checkpoint-2", "model.safetensors")))

    # ---- EarlyStoppingCallback ----------------------------------------------------

    def test_early_stopping_ends_after_patience_evaluations_without_a_better_one(self):
        # score: 0.1, 0.9 (best), 0.5, 0.3 -> two evaluations without a better
        # one: training ends after step 4, with the best of step 2 loaded.
        _, trainer = self.trainer(load_best_model_at_end=True, metric_for_best_model="score",
                                  callbacks=[EarlyStoppingCallback(2)])
        out = trainer.train()
        self.assertEqual(out.global_step, 4)
        state = read_json(os.path.join(self.out, "trainer_state.json"))
        self.assertEqual(state["global_step"], 4)
        self.assertEqual(state["max_steps"], 6)
        self.assertEqual(state["best_global_step"], 2)
        self.assertEqual(state["stateful_callbacks"]["EarlyStoppingCallback"], {
            "args": {"early_stopping_patience": 2, "early_stopping_threshold": 0.0},
            "attributes": {"early_stopping_patience_counter": 2}})
        self.assertEqual(read_bytes(os.path.join(self.out, "model.safetensors")),
                         read_bytes(os.path.join(self.out, "checkpoint-2", "model.safetensors")))
        self.assertEqual(self.checkpoints(), [1, 2, 3, 4])

    def test_an_improvement_within_the_threshold_counts_as_none(self):
        # 0.1 -> 0.9 improves by 0.8 > 0.5; 0.5, 0.3 do not improve: stop at 4.
        # With threshold 0.85 step 2 does not count as better either: stop at 3.
        for threshold, last in ((0.5, 4), (0.85, 3)):
            with self.subTest(threshold=threshold):
                shutil.rmtree(self.out, ignore_errors=True)
                _, trainer = self.trainer(load_best_model_at_end=True,
                                          metric_for_best_model="score",
                                          callbacks=[EarlyStoppingCallback(2, threshold)])
                self.assertEqual(trainer.train().global_step, last)

    def test_early_stopping_needs_load_best_model_at_end(self):
        _, trainer = self.trainer(metric_for_best_model="score",
                                  callbacks=[EarlyStoppingCallback(1)])
        with self.assertRaises(CputrainError) as cm:
            trainer.train()
        self.assertIn("early stopping needs load_best_model_at_end", cm.exception.message)
        with self.assertRaises(ValueError):
            EarlyStoppingCallback(0)

    def test_a_resumed_run_goes_on_with_the_count(self):
        # Stopped by the user at step 3 (count 1 after 0.5), resumed: 0.3 at
        # step 4 makes the count 2 and ends training there, as without the stop.
        _, trainer = self.trainer(progress=lambda e, step, *r: e == Event.SAVE and step == 3,
                                  load_best_model_at_end=True, metric_for_best_model="score",
                                  callbacks=[EarlyStoppingCallback(2)])
        with self.assertRaises(CputrainError):
            trainer.train()
        state = read_json(os.path.join(self.out, "checkpoint-3", "trainer_state.json"))
        self.assertEqual(state["stateful_callbacks"]["EarlyStoppingCallback"]["attributes"],
                         {"early_stopping_patience_counter": 1})
        _, trainer = self.trainer(load_best_model_at_end=True, metric_for_best_model="score",
                                  resume_from_checkpoint="true",
                                  callbacks=[EarlyStoppingCallback(2)])
        self.assertEqual(trainer.train().global_step, 4)

    def test_strategies_must_match(self):
        for kw, text in [
                (dict(eval_strategy="epoch"), "requires the save and eval strategy to match, "
                 "but found eval_strategy 'epoch' and save_strategy 'steps'"),
                (dict(eval_steps=2, save_steps=3), "not a round multiple of eval_steps 2"),
                (dict(eval_steps=0.25, save_steps=2), "mixing ratio and absolute steps")]:
            with self.subTest(kw=kw), self.assertRaises(CputrainError) as cm:
                self.trainer(load_best_model_at_end=True, metric_for_best_model="score", **kw)
            self.assertEqual(cm.exception.status, Status.ERR_INVALID_ARG)
            self.assertTrue(cm.exception.message.startswith("load_best_model_at_end: requires"),
                            cm.exception.message)
            self.assertIn(text, cm.exception.message)
        # A multiple is fine.
        self.trainer(load_best_model_at_end=True, eval_steps=1, save_steps=3)

    def test_workflow_checks_the_metric_before_training(self):
        args = TrainingArgs(output_dir=os.path.join(self.dir, "wf"),
                            metric_for_best_model="eval_accuracy")
        wf = Workflow("run_qa.py", args)
        with self.assertRaises(CputrainError) as cm:
            wf.check_best_metric(["exact_match", "f1"])
        self.assertEqual(cm.exception.status, Status.ERR_INVALID_ARG)
        self.assertIn("--metric_for_best_model eval_accuracy: the evaluation reports "
                      "eval_exact_match, eval_f1 (no loss, as in run_qa.py)",
                      cm.exception.message)
        wf.check_best_metric(["loss", "accuracy"])
        wf.close()


class TrainerStateIntegersTest(unittest.TestCase):

    def test_step_fields_are_integers(self):
        out = tempfile.mkdtemp(prefix="cputrain-state-")
        self.addCleanup(shutil.rmtree, out, True)
        model = Model.create("bert-test", seed=1)
        self.addCleanup(model.close)
        # save_steps as a ratio: TrainerState records ceil(0.5 * 6) = 3.
        args = TrainingArgs(output_dir=out, per_device_train_batch_size=4,
                            gradient_accumulation_steps=2, num_train_epochs=2.0,
                            logging_steps=2.0, save_steps=0.5, seed=11)
        self.addCleanup(args.close)
        trainer = Trainer(model, args, train_dataset=qa_dataset())
        self.addCleanup(trainer.close)
        trainer.train()
        for path in (os.path.join(out, "trainer_state.json"),
                     os.path.join(out, "checkpoint-3", "trainer_state.json")):
            state = read_json(path)
            for key in ("logging_steps", "eval_steps", "save_steps", "global_step", "max_steps",
                        "num_train_epochs", "train_batch_size", "num_input_tokens_seen"):
                self.assertIs(type(state[key]), int, "%s: %s is %r" % (path, key, state[key]))
            self.assertEqual((state["logging_steps"], state["save_steps"], state["eval_steps"]),
                             (2, 3, 500))
            self.assertIs(type(state["epoch"]), float)


if __name__ == "__main__":
    unittest.main()
