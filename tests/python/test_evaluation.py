"""Trainer(eval_dataset=, compute_metrics=) as Transformers' Trainer has
them: at each evaluation the library computes eval_loss over the dataset
and hands every example's logits and labels to compute_metrics, whose
metrics are logged with the "eval_" prefix beside eval_runtime and the
speed figures. The figures are checked against what predict() and
evaluate_loss() give for the same weights, and the token-classification
head's predictions against cputrain.metrics.seqeval."""

import json
import os

from cputrain import (CputrainError, Dataset, EvalPrediction, Model, Trainer, TrainingArgs,
                      metrics)

from helpers import TempDirTest, needs_numpy, np

T = 10


def classification_data(n, seed):
    """A learnable rule: label 1 when the second token is below 60."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, 120, size=(n, T)).astype(np.int32)
    ids[:, 0] = 2  # [CLS]
    return ids, (ids[:, 1] < 60).astype(np.int32)


def ner_data(n, seed):
    """Well-formed IOB2 sentences whose tags follow from the tokens: an
    entity is a B-X token (ids 5..29) and up to two I-X ones (30..49),
    outside tokens are 50..119; [CLS] is unlabelled (-100)."""
    rng = np.random.default_rng(seed)
    ids = np.zeros((n, T), np.int32)
    tags = np.zeros((n, T), np.int32)
    for r in range(n):
        ids[r, 0], tags[r, 0] = 2, -100
        t = 1
        while t < T:
            if rng.random() < 0.3:
                ids[r, t], tags[r, t] = rng.integers(5, 30), 1
                t += 1
                for _ in range(rng.integers(0, 3)):
                    if t < T:
                        ids[r, t], tags[r, t] = rng.integers(30, 50), 2
                        t += 1
            else:
                ids[r, t], tags[r, t] = rng.integers(50, 120), 0
                t += 1
    return ids, tags


@needs_numpy
class EvalDatasetTest(TempDirTest):
    prefix = "cputrain-eval-"

    def run_trainer(self, task, data, compute_metrics, num_labels=2, n_train=48, **kw):
        # bert-test's sizes, with the head's number of classes
        config = os.path.join(self.dir, "config.json")
        with open(config, "w") as f:
            json.dump({"model_type": "bert", "vocab_size": 128, "hidden_size": 32,
                       "num_hidden_layers": 2, "num_attention_heads": 4,
                       "intermediate_size": 64, "max_position_embeddings": 64,
                       "num_labels": num_labels}, f)
        model = Model.create(config, task=task, seed=4)
        self.addCleanup(model.close)
        train = Dataset.from_arrays(task, *data(n_train, 0))
        evaluation = Dataset.from_arrays(task, *data(20, 1))
        for d in (train, evaluation):
            self.addCleanup(d.close)
        fields = dict(output_dir=os.path.join(self.dir, "out"), per_device_train_batch_size=8,
                      per_device_eval_batch_size=6, num_train_epochs=2.0, learning_rate=2e-3,
                      eval_strategy="epoch", save_strategy="no", seed=3)
        fields.update(kw)
        args = TrainingArgs(**fields)
        self.addCleanup(args.close)
        trainer = Trainer(model, args, train_dataset=train, eval_dataset=evaluation,
                          compute_metrics=compute_metrics)
        self.addCleanup(trainer.close)
        trainer.train()
        evals = [e for e in trainer.log_history if "eval_loss" in e]
        return trainer, evaluation, evals

    def test_classification_metrics_are_those_of_the_predictions(self):
        seen = []

        def compute_metrics(p):
            self.assertIsInstance(p, EvalPrediction)
            preds, labels = p  # unpacks as Transformers' EvalPrediction does
            seen.append((preds.shape, labels.shape))
            return {"accuracy": metrics.accuracy(preds.argmax(-1), labels),
                    "eval_f1": metrics.f1(preds.argmax(-1), labels)}

        trainer, evaluation, evals = self.run_trainer("sequence-classification",
                                                      classification_data, compute_metrics)
        self.assertEqual(seen, [((20, 2), (20,))] * 2)
        self.assertEqual([e["epoch"] for e in evals], [1.0, 2.0])
        for e in evals:
            self.assertEqual(sorted(k for k in e if k.startswith("eval_")),
                             ["eval_accuracy", "eval_f1", "eval_loss", "eval_runtime",
                              "eval_samples_per_second", "eval_steps_per_second"])
        # The last evaluation saw the final weights: its figures are the
        # ones predict() and evaluate_loss() give now.
        logits = trainer.predict(evaluation)
        labels = evaluation.labels()
        self.assertEqual(evals[-1]["eval_accuracy"],
                         metrics.accuracy(logits.argmax(-1), labels))
        self.assertAlmostEqual(evals[-1]["eval_loss"], trainer.evaluate_loss(evaluation),
                               places=6)
        with open(os.path.join(self.dir, "out", "trainer_state.json")) as f:
            history = json.load(f)["log_history"]
        self.assertIn(evals[-1], history)

    def test_token_classification_scored_with_seqeval(self):
        tags = ["O", "B-X", "I-X"]

        def compute_metrics(p):
            s = metrics.Seqeval(tags)
            for pred, lab in zip(p.predictions.argmax(-1), p.label_ids):
                s.add(pred, lab)
            scores = s.compute()
            return {k[len("overall_"):]: v for k, v in scores.items() if k.startswith("overall_")}

        trainer, evaluation, evals = self.run_trainer("token-classification", ner_data,
                                                      compute_metrics, num_labels=3,
                                                      n_train=96, num_train_epochs=8.0,
                                                      learning_rate=5e-3)
        ref = metrics.Seqeval(tags)
        for pred, lab in zip(trainer.predict(evaluation).argmax(-1), evaluation.labels()):
            ref.add(pred, lab)
        final = ref.compute()
        self.assertEqual(evals[-1]["eval_f1"], final["overall_f1"])
        self.assertEqual(evals[-1]["eval_accuracy"], final["overall_accuracy"])
        # The rule is learnt.
        self.assertGreater(evals[-1]["eval_f1"], 0.9, evals)

    def test_argmax_accuracy_counts_the_labelled_positions(self):
        # evaluate_accuracy / set_eval_accuracy against numpy's argmax of
        # predict()'s logits over the positions whose label is not -100
        # (token classification: [CLS] unlabelled), and per example for
        # sequence classification
        for task, data, num_labels in (("token-classification", ner_data, 3),
                                       ("sequence-classification", classification_data, 2)):
            trainer, evaluation, evals = self.run_trainer(
                task, data, None, num_labels=num_labels, num_train_epochs=1.0)
            logits, labels = trainer.predict(evaluation), evaluation.labels()
            kept = labels != -100
            expect = float((logits.argmax(-1)[kept] == labels[kept]).mean())
            loss, accuracy = trainer.evaluate_accuracy(evaluation)
            self.assertAlmostEqual(accuracy, expect, places=12, msg=task)
            self.assertAlmostEqual(loss, trainer.evaluate_loss(evaluation), places=6)
            self.assertNotIn("eval_accuracy", evals[-1])  # off unless asked
            trainer.set_eval_accuracy()
            self.assertEqual(trainer.evaluate_accuracy(evaluation)[1], accuracy)
        qa = Model.create("bert-test", task="question-answering", seed=1)
        self.addCleanup(qa.close)
        with TrainingArgs(output_dir=self.dir) as args, Trainer(qa, args) as t:
            with self.assertRaisesRegex(CputrainError, "question answering"):
                t.set_eval_accuracy()

    def test_metrics_without_an_eval_dataset_are_refused(self):
        model = Model.create("bert-test", task="sequence-classification", seed=4)
        self.addCleanup(model.close)
        train = Dataset.from_arrays("sequence-classification", *classification_data(8, 0))
        self.addCleanup(train.close)
        args = TrainingArgs(output_dir=os.path.join(self.dir, "o"), save_strategy="no")
        self.addCleanup(args.close)
        with Trainer(model, args, train_dataset=train, compute_metrics=lambda p: {}) as t:
            with self.assertRaises(CputrainError) as cm:
                t.train()
            self.assertIn("no evaluation dataset", cm.exception.message)

    def test_an_exception_in_compute_metrics_reaches_the_caller(self):
        def compute_metrics(p):
            raise KeyError("boom")

        with self.assertRaises(KeyError):
            self.run_trainer("sequence-classification", classification_data, compute_metrics)


def regression_data(n, seed):
    """A target the first token decides (one of ten, 5..14): (id - 5) / 2."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(20, 120, size=(n, T)).astype(np.int32)
    ids[:, 0] = rng.integers(5, 15, size=n)
    return ids, ((ids[:, 0] - 5) / 2.0).astype(np.float32)


def multi_label_data(n, seed):
    """Three labels, the bits of the first token's id - 5 (one of eight)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(20, 120, size=(n, T)).astype(np.int32)
    ids[:, 0] = rng.integers(5, 13, size=n)
    code = ids[:, 0] - 5
    return ids, np.stack([(code >> k) & 1 for k in range(3)], axis=1).astype(np.float32)


@needs_numpy
class RealLabelsTest(EvalDatasetTest):
    def test_regression_scored_with_pearson(self):
        def compute_metrics(p):
            self.assertEqual(p.label_ids.dtype, np.float32)
            return {"pearson": metrics.pearsonr(p.predictions[:, 0], p.label_ids)}

        trainer, evaluation, evals = self.run_trainer("sequence-classification", regression_data,
                                                      compute_metrics, num_labels=1,
                                                      n_train=96, num_train_epochs=8.0,
                                                      learning_rate=5e-3)
        self.assertTrue(evaluation.has_float_labels)
        self.assertEqual(evals[-1]["eval_pearson"],
                         metrics.pearsonr(trainer.predict(evaluation)[:, 0], evaluation.labels()))
        self.assertGreater(evals[-1]["eval_pearson"], 0.9, evals)

    def test_multi_label_trains_on_binary_cross_entropy(self):
        def compute_metrics(p):
            hot = (p.predictions > 0).astype(np.int32)
            return {"f1": metrics.f1(hot, p.label_ids.astype(np.int32))}

        trainer, evaluation, evals = self.run_trainer("sequence-classification",
                                                      multi_label_data, compute_metrics,
                                                      num_labels=3, n_train=96,
                                                      num_train_epochs=8.0, learning_rate=5e-3)
        self.assertEqual(evaluation.labels().shape, (20, 3))
        self.assertGreater(evals[-1]["eval_f1"], 0.8, evals)
        self.assertLess(evals[-1]["eval_loss"], evals[0]["eval_loss"])

    def test_one_kind_of_label_per_dataset_and_finite_values(self):
        ids = [2] + [20] * (T - 1)
        with Dataset("sequence-classification", T) as d:
            d.add(ids, [0.5, 1.0])
            d.add(ids, [1, 0])  # numbers, in a dataset of real labels
            self.assertTrue(d.has_float_labels)
            self.assertEqual(d.labels().tolist(), [[0.5, 1.0], [1.0, 0.0]])
            with self.assertRaisesRegex(ValueError, "needs 2 labels each"):
                d.add(ids, [0.5])
            with self.assertRaises(CputrainError) as cm:
                d.add(ids, [float("nan"), 1.0])
            self.assertIn("labels[0] is not finite", cm.exception.message)
        with Dataset("sequence-classification", T) as d:
            d.add(ids, 1)
            with self.assertRaises(CputrainError) as cm:
                d.add(ids, [0.5])
            self.assertIn("holds class ids", cm.exception.message)
        with Dataset("token-classification", T) as d, self.assertRaises(TypeError):
            d.add(ids, [0.5] * T)

    def test_problem_type_decides_the_loss(self):
        config = os.path.join(self.dir, "single.json")
        with open(config, "w") as f:
            json.dump({"model_type": "bert", "vocab_size": 128, "hidden_size": 32,
                       "num_hidden_layers": 1, "num_attention_heads": 4,
                       "intermediate_size": 64, "max_position_embeddings": 64,
                       "num_labels": 3, "problem_type": "single_label_classification"}, f)
        ids = [[2, 30, 40, 50]]
        with Model.create(config, task="sequence-classification") as m:
            self.assertGreater(m.forward_backward(ids, labels=[2]), 0)
            with self.assertRaises(CputrainError) as cm:
                m.forward_backward(ids, labels=[[0.0, 1.0, 0.0]])
            self.assertIn("needs 1 class ids", cm.exception.message)
        with open(config, "w") as f:
            f.write('{"model_type": "bert", "problem_type": "ranking"}')
        with self.assertRaises(CputrainError) as cm:
            Model.create(config, task="sequence-classification")
        self.assertIn("problem_type", cm.exception.message)


class FromDictTest(TempDirTest):
    def test_a_tokenizer_call_and_labels_make_a_dataset(self):
        vocab = os.path.join(self.dir, "vocab.txt")
        with open(vocab, "w") as f:
            f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad",
                               "film"]) + "\n")
        from cputrain import Tokenizer
        with Tokenizer(vocab) as tok:
            enc = tok(["good film", "bad", "film film good"], padding=True)
        for labels, real in (([1, 0, 1], False), ([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], True)):
            with self.subTest(labels=labels), Dataset.from_dict(
                    "text-classification", dict(enc, labels=labels)) as d:
                self.assertEqual(len(d), 3)
                self.assertEqual(d.has_float_labels, real)
                self.assertEqual(d.lengths().tolist(), [4, 3, 5])
        with self.assertRaisesRegex(ValueError, "unknown columns"):
            Dataset.from_dict("text-classification", dict(enc, labels=[0, 1, 0], extra=[1]))
