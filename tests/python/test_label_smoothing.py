"""label_smoothing_factor against PyTorch: the library's smoothed loss and
its gradients for the heads with `labels` (sequence classification, masked
LM) equal torch.nn.functional.cross_entropy(label_smoothing=eps), which is
Trainer's LabelSmoother for labels that are not -100; question answering is
not smoothed (Trainer smooths only `labels`). Needs Debian's python3-torch;
skips, saying why, without it."""

import os
import shutil
import sys
import tempfile
import unittest

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
    TORCH_MISSING = None
except ImportError as e:
    TORCH_MISSING = "`import torch` failed (%s); run with /usr/bin/python3" % e

if TORCH_MISSING is None:
    sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "ref")))
    import torch_bert as ref  # noqa: E402

from cputrain import CputrainError, Model  # noqa: E402

EPS = 0.1
LOSS_TOL = 1e-5
GRAD_TOL = 1e-4


def reference(folder, task, batch, eps):
    """Loss and gradients of the reference with a label-smoothed loss."""
    model, missing = ref.load_pretrained(folder, task)
    assert not missing, missing
    model.eval()
    model.zero_grad(set_to_none=True)
    inputs = {k: torch.as_tensor(np.asarray(batch[k])).long()
              for k in ("input_ids", "token_type_ids", "attention_mask")}
    _, logits = model(**inputs)
    labels = torch.as_tensor(np.asarray(batch["labels"])).long().reshape(-1)
    loss = F.cross_entropy(logits.reshape(labels.shape[0], -1), labels, ignore_index=-100,
                           label_smoothing=eps)
    loss.backward()
    grads = {n: p.grad.detach().numpy().copy() for n, p in model.named_parameters()
             if p.grad is not None}
    return float(loss), grads


@unittest.skipIf(TORCH_MISSING is not None, TORCH_MISSING or "")
class LabelSmoothingTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="cputrain-ls-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def pair(self, task, num_labels=None):
        model = Model.create("bert-test", task=task, seed=3)
        model.training = False
        folder = os.path.join(self.tmp, task)
        os.mkdir(folder)
        model.save(folder)
        return model, folder

    def check(self, task):
        model, folder = self.pair(task)
        with model:
            r = ref.load_pretrained(folder, task)[0]
            batch = ref.example_batch(r.config, batch_size=3, seq_len=12, seed=1, task=task)
            if task in ("masked-lm", "token-classification"):
                batch["labels"][1, :] = -100  # a row with nothing to predict
            feed = {k: batch[k] for k in ("input_ids", "token_type_ids", "attention_mask",
                                          "labels")}
            plain = model.forward(**feed)
            model.set_label_smoothing(EPS)
            model.zero_grad()
            loss = model.forward_backward(**feed)
            grads = {n: np.array(g, copy=True) for n, g in model.grads().items()}
            ref_loss, ref_grads = reference(folder, task, batch, EPS)
            self.assertNotAlmostEqual(loss, plain, places=4, msg="smoothing changed nothing")
            self.assertLessEqual(abs(loss - ref_loss) / abs(ref_loss), LOSS_TOL,
                                 "loss %r vs torch %r" % (loss, ref_loss))
            for name, g in ref_grads.items():
                # a bias is judged against its weight too (key.bias's exact
                # gradient is 0: softmax ignores a constant shift)
                scale = float(np.max(np.abs(g)))
                weight = name[:-len("bias")] + "weight" if name.endswith(".bias") else None
                if weight in ref_grads:
                    scale = max(scale, float(np.max(np.abs(ref_grads[weight]))))
                scale = max(scale, 1e-30)
                err = float(np.max(np.abs(grads[name] - g))) / scale
                self.assertLessEqual(err, GRAD_TOL, "%s: gradient error %.2e" % (name, err))
            model.set_label_smoothing(0)
            self.assertAlmostEqual(model.forward(**feed), plain, places=6)

    def test_sequence_classification(self):
        self.check("sequence-classification")

    def test_masked_lm(self):
        self.check("masked-lm")

    def test_token_classification(self):
        self.check("token-classification")

    def test_question_answering_is_not_smoothed(self):
        model = Model.create("bert-test", task="question-answering", seed=3)
        with model:
            model.training = False
            batch = ref.example_batch("bert-test", seq_len=12, task="question-answering")
            feed = {k: batch[k] for k in ("input_ids", "token_type_ids", "attention_mask",
                                          "start_positions", "end_positions")}
            plain = model.forward(**feed)
            model.set_label_smoothing(EPS)
            self.assertEqual(model.forward(**feed), plain)

    def test_trainer_evaluate_loss_uses_the_arguments(self):
        # Trainer's eval loss goes through its LabelSmoother too, and
        # bf16_full_eval evaluates with bf16 products after fp32 training.
        from cputrain import Dataset, Precision, Trainer, TrainingArgs
        batch = ref.example_batch("bert-test", batch_size=4, seq_len=12, seed=2,
                                  task="sequence-classification")
        data = Dataset.from_arrays("sequence-classification", batch["input_ids"],
                                   batch["labels"], batch["token_type_ids"],
                                   batch["attention_mask"])
        losses = {}
        for name, kw in (("plain", {}), ("smoothed", {"label_smoothing_factor": EPS}),
                         ("bf16", {"bf16_full_eval": True})):
            with Model.create("bert-test", task="sequence-classification", seed=3) as model, \
                    TrainingArgs(output_dir=self.tmp, **kw) as args, \
                    Trainer(model, args) as trainer:
                losses[name] = trainer.evaluate_loss(data)
                self.assertEqual(model.precision, Precision.FP32)  # restored
        self.assertGreater(abs(losses["smoothed"] - losses["plain"]), 1e-4, losses)
        self.assertNotEqual(losses["bf16"], losses["plain"])
        self.assertLess(abs(losses["bf16"] - losses["plain"]), 2e-2 * abs(losses["plain"]))
        data.close()

    def test_out_of_range_is_refused(self):
        with Model.create("bert-test", task="sequence-classification", seed=3) as model:
            for bad in (-0.1, 1.0, float("nan")):
                with self.assertRaisesRegex(CputrainError, r"label smoothing factor must lie "
                                            r"in \[0, 1\)"):
                    model.set_label_smoothing(bad)


if __name__ == "__main__":
    unittest.main()
