"""Unpadded execution and gradient checkpointing change no result.

The library computes only the tokens a batch's attention mask keeps. These
tests hold it to what that promises: more padding changes nothing (bit for
bit, dropout on), a row alone gives what it gives inside a ragged batch,
the PyTorch reference on padded batches agrees for ragged rows from length
1 to full length, and recomputing layers in backward (gradient
checkpointing) gives the same gradients bit for bit."""
import unittest

import numpy as np

from test_model_torch import (BF16_GRAD_TOL, BF16_LOGITS_TOL, BF16_LOSS_TOL, FP32_GRAD_TOL,
                              FP32_LOGITS_TOL, FP32_LOSS_TOL, c_run, config_arg, created_pair,
                              grad_error, needs_torch, ref, rel_loss, rel_max, worst,
                              setUpModule, tearDownModule)  # noqa: F401 (the temp folder)
from cputrain import Model

TASKS = ("question-answering", "sequence-classification", "masked-lm", "token-classification")
CONFIGS = ("bert-test", "distilbert-test")
T = 12
# row lengths 1, T (full) and in between
PAD_ROWS = (T - 1, 0, 5)


def ragged(config, task, seed=0):
    return ref.example_batch(config, batch_size=3, seq_len=T, seed=seed, task=task,
                             pad_rows=PAD_ROWS)


def widen(batch, extra, pad_id):
    """The same rows padded with `extra` more positions."""
    out = dict(batch)
    B = batch["input_ids"].shape[0]
    for key, fill in (("input_ids", pad_id), ("token_type_ids", 0), ("attention_mask", 0)):
        out[key] = np.concatenate([batch[key], np.full((B, extra), fill, np.int32)], axis=1)
    if "labels" in batch and batch["labels"].ndim == 2:
        out["labels"] = np.concatenate([batch["labels"], np.full((B, extra), -100, np.int32)],
                                       axis=1)
    return out


def row(batch, r):
    """Row r alone, cut to its kept length."""
    n = int(batch["attention_mask"][r].sum())
    out = {}
    for key, value in batch.items():
        value = np.asarray(value)
        out[key] = value[r:r + 1, :n] if value.ndim == 2 else value[r:r + 1]
    return out


class MorePaddingTest(unittest.TestCase):
    def test_more_padding_changes_nothing_bitwise(self):
        for config in CONFIGS:
            for task in TASKS:
                for precision in ("fp32", "bf16"):
                    with self.subTest(config=config, task=task, precision=precision):
                        with Model.create(config_arg(config), task=task, seed=3) as m:
                            m.precision = precision
                            m.training = True  # dropout on: the masks must follow
                            pad_id = 0
                            batch = ragged(config, task)
                            runs = []
                            for b in (batch, widen(batch, 9, pad_id)):
                                m.set_seed(7, 0)
                                runs.append(c_run(m, b))
                        (l0, g0, d0), (l1, g1, d1) = runs
                        self.assertEqual(l0, l1)
                        if g0.ndim == 3:
                            g1 = g1[:, :T]
                        np.testing.assert_array_equal(g0, g1)
                        for name in d0:
                            if "position_embeddings" in name:
                                # the extra positions get no gradient
                                d1[name] = d1[name][:d0[name].shape[0]]
                            np.testing.assert_array_equal(d0[name], d1[name], name)


class RowAloneTest(unittest.TestCase):
    """A row computed alone at its own length equals the row inside the
    ragged batch: logits at the kept positions, and loss and gradients as
    the batch's mean over rows (every row counts one start, one end, one
    label; MLM is weighted by each row's label count)."""

    def test_each_row_alone(self):
        for config in CONFIGS:
            for task in TASKS:
                for precision, ltol, gtol in (("fp32", FP32_LOGITS_TOL, FP32_GRAD_TOL),
                                              ("bf16", BF16_LOGITS_TOL, BF16_GRAD_TOL)):
                    with self.subTest(config=config, task=task, precision=precision):
                        self.check(config, task, precision, ltol, gtol)

    def check(self, config, task, precision, ltol, gtol):
        with Model.create(config_arg(config), task=task, seed=3) as m:
            m.precision = precision
            m.training = False
            batch = ragged(config, task)
            loss, logits, grads = c_run(m, batch)
            total = {n: np.zeros_like(g, dtype=np.float64) for n, g in grads.items()}
            mean_loss, weights = 0.0, []
            for r in range(3):
                w = 1.0 / 3
                if task in ("masked-lm", "token-classification"):  # a mean over labels
                    w = (batch["labels"][r] != -100).sum() / (batch["labels"] != -100).sum()
                weights.append(w)
                if w == 0:
                    continue  # a row with no label to score: its loss alone is 0/0
                one = row(batch, r)
                l1, g1, d1 = c_run(m, one)
                n = one["input_ids"].shape[1]
                want = logits[r] if task == "sequence-classification" else logits[r, :n]
                self.assertLessEqual(rel_max(g1[0], want), ltol, "row %d logits" % r)
                mean_loss += w * l1
                for name, g in d1.items():
                    total[name] += w * g
        self.assertLessEqual(rel_loss(mean_loss, loss), ltol)
        errors = {n: grad_error(n, grads[n], total) for n in total}
        self.assertLessEqual(max(errors.values()), gtol, worst(errors))


@needs_torch
class RaggedAgainstReferenceTest(unittest.TestCase):
    """Rows of length 1 and T in one batch, against PyTorch on the padded batch."""

    def test_ragged_rows(self):
        for config in CONFIGS:
            for task in TASKS:
                for precision in ("fp32", "bf16"):
                    with self.subTest(config=config, task=task, precision=precision):
                        self.check(config, task, precision)

    def check(self, config, task, precision):
        bf16 = precision == "bf16"
        model, reference, _ = created_pair(config, task)
        with model:
            model.precision = precision
            batch = ragged(config, task)
            loss, logits, grads = c_run(model, batch)
        r = ref.run_batch(reference, **batch,
                          precision="bf16-emulated" if bf16 else "fp32")
        self.assertLessEqual(rel_loss(loss, r.loss), BF16_LOSS_TOL if bf16 else FP32_LOSS_TOL)
        self.assertLessEqual(rel_max(logits, r.logits),
                             BF16_LOGITS_TOL if bf16 else FP32_LOGITS_TOL)
        errors = {n: grad_error(n, grads[n], r.grads) for n in r.grads}
        self.assertLessEqual(max(errors.values()), BF16_GRAD_TOL if bf16 else FP32_GRAD_TOL,
                             worst(errors))


class CheckpointingTest(unittest.TestCase):
    def test_same_gradients_bitwise(self):
        for config in CONFIGS:
            for task in TASKS:
                for precision in ("fp32", "bf16"):
                    with self.subTest(config=config, task=task, precision=precision):
                        runs = []
                        for ckpt in (False, True):
                            with Model.create(config_arg(config), task=task, seed=3) as m:
                                m.precision = precision
                                m.training = True
                                m.gradient_checkpointing = ckpt
                                self.assertEqual(m.gradient_checkpointing, ckpt)
                                m.set_seed(11, 0)
                                batch = ragged(config, task)
                                first = c_run(m, batch)
                                # accumulation: a second micro-batch adds on
                                m.forward_backward(**ragged(config, task, seed=1))
                                runs.append((first, {n: np.array(g, copy=True)
                                                     for n, g in m.grads().items()},
                                             m.memory_bytes("activations")))
                        ((l0, g0, d0), acc0, mem0), ((l1, g1, d1), acc1, mem1) = runs
                        self.assertLess(mem1, mem0, "checkpointing keeps less")
                        self.assertEqual(l0, l1)
                        np.testing.assert_array_equal(g0, g1)
                        for name in d0:
                            np.testing.assert_array_equal(d0[name], d1[name], name)
                            np.testing.assert_array_equal(acc0[name], acc1[name], name)


if __name__ == "__main__":
    unittest.main()
