"""The model (through the Python binding) against the PyTorch reference in
tests/ref/torch_bert.py, which follows Transformers' BertFor* and
DistilBertFor* classes: BERT and DistilBERT, the four heads, a padded batch
with mixed token types, in eval mode (dropout off) so results are exact
functions of the weights.

Flow: the library creates a model and saves it; the reference loads that
folder; both run the same batch. And the reverse: the reference writes a
Hugging Face folder and the library loads it.

Norms (see rel_max / grad_error / grad_rms_error below):
  logits      max|c - r| / max|r| over the whole tensor; loss |c - r| / |r|
  fp32 grads  max|g_c - g_r| / scale, scale = max|g_r| of that tensor or,
              for a bias, of its weight when that is larger. Some biases have
              a gradient that is zero in exact arithmetic (attention key
              biases: softmax ignores a shift common to a query's scores; the
              QA head's bias: each softmax's gradient sums to zero over the
              positions; the LayerNorm bias right under that head), so what
              both sides compute there is rounding noise, judged on the scale
              of the weight next to it.
  bf16 grads  rms(g_c - g_r) / scale with the same scale in RMS terms (a
              relative L2 error), bounded by max(5e-2, 2 x the same error of
              PyTorch's own CPU bf16 autocast on the same weights and batch).

CPUTRAIN_REPORT=1 prints every figure at the end. Tests that need PyTorch
skip (saying why) only when `import torch` fails; the others always run.
"""

import importlib.util
import json
import math
import os
import shutil
import sys
import tempfile
import unittest

try:
    import torch
    TORCH_MISSING = None
except ImportError as e:
    torch = np = None
    TORCH_MISSING = ("`import torch` failed (%s): the model is not compared with the PyTorch "
                     "reference; run with Debian's /usr/bin/python3 (python3-torch)" % e)

REF_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ref")
if torch is not None:
    # With PyTorch there, anything else missing is an error, not a skip.
    import numpy as np  # noqa: E402
    sys.path.insert(0, os.path.normpath(REF_DIR))
    import torch_bert as ref  # noqa: E402

from cputrain import CputrainError, Model, Precision, Task  # noqa: E402

needs_torch = unittest.skipIf(TORCH_MISSING is not None, TORCH_MISSING or "")

TASKS = ("question-answering", "sequence-classification", "masked-lm", "token-classification")

FP32_LOGITS_TOL = 1e-5
FP32_LOSS_TOL = 1e-5
FP32_GRAD_TOL = 1e-4
BF16_LOGITS_TOL = 2e-2
BF16_LOSS_TOL = 2e-2
BF16_GRAD_TOL = 5e-2
BF16_GRAD_AUTOCAST_FACTOR = 2.0

# Configurations besides the built-in "bert-test" and "distilbert-test":
# other sizes, gelu_new, a pad id that is not 0, three token types, and
# DistilBERT's sinusoidal positions.
CONFIG_FILES = {
    "bert-gelu-new": {
        "model_type": "bert", "vocab_size": 96, "hidden_size": 48, "num_hidden_layers": 3,
        "num_attention_heads": 3, "intermediate_size": 80, "max_position_embeddings": 40,
        "type_vocab_size": 3, "hidden_act": "gelu_new", "layer_norm_eps": 1e-7,
        "pad_token_id": 1, "initializer_range": 0.05, "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1},
    "distilbert-sinusoidal-gelu-new": {
        "model_type": "distilbert", "vocab_size": 80, "dim": 48, "n_layers": 3, "n_heads": 6,
        "hidden_dim": 72, "max_position_embeddings": 40, "activation": "gelu_new",
        "sinusoidal_pos_embds": True, "pad_token_id": 0, "initializer_range": 0.05},
    # Head size 64 as in bert-base, long enough rows for blocked kernels.
    "bert-wide": {
        "model_type": "bert", "vocab_size": 512, "hidden_size": 256, "num_hidden_layers": 2,
        "num_attention_heads": 4, "intermediate_size": 1024, "max_position_embeddings": 128},
    "bert-3-labels": {"model_type": "bert", "vocab_size": 128, "hidden_size": 32,
                      "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64,
                      "max_position_embeddings": 64, "num_labels": 3},
    "bert-regression": {"model_type": "bert", "vocab_size": 128, "hidden_size": 32,
                        "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64,
                        "max_position_embeddings": 64, "num_labels": 1},
    "distilbert-3-labels": {"model_type": "distilbert", "vocab_size": 128, "dim": 32,
                            "n_layers": 2, "n_heads": 4, "hidden_dim": 64,
                            "max_position_embeddings": 64,
                            "id2label": {"0": "neg", "1": "neutral", "2": "pos"},
                            "label2id": {"neg": 0, "neutral": 1, "pos": 2}},
    "distilbert-regression": {"model_type": "distilbert", "vocab_size": 128, "dim": 32,
                              "n_layers": 2, "n_heads": 4, "hidden_dim": 64,
                              "max_position_embeddings": 64, "num_labels": 1},
    "bert-multi-label": {"model_type": "bert", "vocab_size": 128, "hidden_size": 32,
                         "num_hidden_layers": 2, "num_attention_heads": 4,
                         "intermediate_size": 64, "max_position_embeddings": 64,
                         "num_labels": 4, "problem_type": "multi_label_classification"},
    "distilbert-regression-3": {"model_type": "distilbert", "vocab_size": 128, "dim": 32,
                                "n_layers": 2, "n_heads": 4, "hidden_dim": 64,
                                "max_position_embeddings": 64, "num_labels": 3,
                                "problem_type": "regression"},
}

# (configuration, tasks) compared head by head.
MATRIX = [
    ("bert-test", TASKS),
    ("distilbert-test", TASKS),
    ("bert-gelu-new", TASKS),
    ("distilbert-sinusoidal-gelu-new", TASKS),
    ("bert-wide", TASKS),
    ("bert-3-labels", ("sequence-classification", "token-classification")),
    ("bert-regression", ("sequence-classification",)),
    ("distilbert-3-labels", ("sequence-classification", "token-classification")),
    ("distilbert-regression", ("sequence-classification",)),
    ("bert-multi-label", ("sequence-classification",)),
    ("distilbert-regression-3", ("sequence-classification",)),
]

_tmp_root = None
REPORT = []  # (what, figures) lines for CPUTRAIN_REPORT


def setUpModule():
    global _tmp_root
    _tmp_root = tempfile.mkdtemp(prefix="cputrain-torch-")


def tearDownModule():
    shutil.rmtree(_tmp_root, ignore_errors=True)
    if os.environ.get("CPUTRAIN_REPORT") and REPORT:
        width = max(len(what) for what, _ in REPORT)
        sys.stderr.write("\n---- model vs PyTorch reference (CPUTRAIN_REPORT)\n")
        for what, figures in REPORT:
            sys.stderr.write("%-*s  %s\n" % (width, what, figures))


def new_dir(name):
    return tempfile.mkdtemp(prefix=name + "-", dir=_tmp_root)


def config_arg(name):
    """What Model.create takes for `name`: a built-in name, or the path of a
    config.json written for it."""
    if name not in CONFIG_FILES:
        return name
    path = os.path.join(_tmp_root, name + ".json")
    if not os.path.exists(path):
        with open(path, "w") as f:
            json.dump(CONFIG_FILES[name], f, indent=2)
    return path


# ---- norms -----------------------------------------------------------------------

def rel_max(c, r):
    """max|c - r| / max|r|: the error relative to the tensor's largest value."""
    c, r = np.asarray(c, dtype=np.float64), np.asarray(r, dtype=np.float64)
    return float(np.max(np.abs(c - r)) / max(np.max(np.abs(r)), 1e-30))


def rel_loss(c, r):
    return abs(c - r) / max(abs(r), 1e-30)


def companion(name, grads):
    """The weight a bias's error is also judged against (see the docstring)."""
    if name.endswith(".bias"):
        weight = name[:-len("bias")] + "weight"
        if weight in grads:
            return weight
    return None


def grad_error(name, c, ref_grads):
    r = ref_grads[name].astype(np.float64)
    scale = np.max(np.abs(r))
    other = companion(name, ref_grads)
    if other is not None:
        scale = max(scale, np.max(np.abs(ref_grads[other])))
    return float(np.max(np.abs(np.asarray(c, dtype=np.float64) - r)) / max(scale, 1e-30))


def _rms(x):
    return float(np.sqrt(np.mean(np.square(np.asarray(x, dtype=np.float64)))))


def grad_rms_error(name, c, ref_grads):
    r = ref_grads[name]
    scale = _rms(r)
    other = companion(name, ref_grads)
    if other is not None:
        scale = max(scale, _rms(ref_grads[other]))
    return _rms(np.asarray(c, dtype=np.float64) - r) / max(scale, 1e-30)


def worst(errors):
    name = max(errors, key=errors.get)
    return "%.2e (%s)" % (errors[name], name)


# ---- running both sides ----------------------------------------------------------

def c_run(model, batch, backward=True):
    """(loss, logits copy, {name: gradient copy}) from the library."""
    model.zero_grad()
    if backward:
        loss = model.forward_backward(**batch)
    else:
        loss = model.forward(**batch)
    logits = np.array(model.logits(), copy=True)
    grads = {name: np.array(g, copy=True) for name, g in model.grads().items()}
    if backward and model.task in LABELLED_ONLY and not model.training:
        logits = labelled_training_logits(model, batch, logits)
    return loss, logits, grads


# Tasks whose training pass runs the head on the labelled tokens only.
LABELLED_ONLY = (Task.MASKED_LM, Task.TOKEN_CLASSIFICATION)


def labelled_training_logits(model, batch, logits):
    """A masked LM's or a token classifier's training pass scores the
    labelled tokens only: its logits are 0 at the others and at those what
    forward() computes. Checks both and gives forward()'s full logits (in
    eval mode, where the two passes are the same computation)."""
    scored = np.asarray(batch["labels"]) != -100
    if np.any(logits[~scored] != 0):
        raise AssertionError("training logits are not 0 where the label is -100")
    model.forward(**batch)
    full = np.array(model.logits(), copy=True)
    if scored.any() and rel_max(logits[scored], full[scored]) > 1e-6:
        raise AssertionError("training logits differ from forward()'s on the labelled tokens: "
                             "%.1e" % rel_max(logits[scored], full[scored]))
    return full


def created_pair(config, task, seed=42):
    """A library model in eval mode, and the reference loaded from its saved folder."""
    model = Model.create(config_arg(config), task=task, seed=seed)
    model.training = False
    folder = new_dir("c-%s-%s" % (config, task))
    model.save(folder)
    reference, missing = ref.load_pretrained(folder, task)
    if missing:
        model.close()
        raise AssertionError("the reference found no %s in %s" % (missing, folder))
    return model, reference, folder


# Rows of 12 tokens, except where a configuration is there for longer ones.
SEQ_LEN = {128: 96}  # max_position_embeddings -> seq_len


def batch_for(reference, task, seed=0, **overrides):
    seq_len = SEQ_LEN.get(reference.config.max_position_embeddings, 12)
    batch = ref.example_batch(reference.config, batch_size=3, seq_len=seq_len, seed=seed, task=task)
    batch.update(overrides)
    return batch


# ---- the reference on its own ----------------------------------------------------------

@needs_torch
class ReferenceSelfTest(unittest.TestCase):
    """The oracle itself: Transformers' parameter counts, and its gradients
    against finite differences (torch.autograd.gradcheck, float64; the full
    slow-mode check is `python3 tests/ref/torch_bert.py self-test`)."""

    def test_parameter_counts(self):
        for name, task, count in (("bert-base-uncased", "question-answering", 108_893_186),
                                  ("distilbert-base-uncased", "question-answering", 66_364_418)):
            model = ref.HEADS[ref.Config.named(name).model_type, task](ref.Config.named(name))
            self.assertEqual(ref.num_parameters(model), count, name)

    def test_state_dict_names(self):
        qa = [n for n, _ in ref.build_model("bert-test", "question-answering").named_parameters()]
        self.assertEqual(qa[:3], ["bert.embeddings.word_embeddings.weight",
                                  "bert.embeddings.position_embeddings.weight",
                                  "bert.embeddings.token_type_embeddings.weight"])
        self.assertIn("bert.encoder.layer.1.attention.self.query.weight", qa)
        self.assertEqual(qa[-2:], ["qa_outputs.weight", "qa_outputs.bias"])
        mlm = [n for n, _ in ref.build_model("bert-test", "masked-lm").named_parameters()]
        self.assertEqual(mlm[-5:], ["cls.predictions.bias", "cls.predictions.transform.dense.weight",
                                    "cls.predictions.transform.dense.bias",
                                    "cls.predictions.transform.LayerNorm.weight",
                                    "cls.predictions.transform.LayerNorm.bias"])
        dmlm = [n for n, _ in ref.build_model("distilbert-test", "masked-lm").named_parameters()]
        self.assertIn("distilbert.transformer.layer.0.attention.q_lin.weight", dmlm)
        self.assertEqual(dmlm[-1], "vocab_projector.bias")

    def test_gradcheck(self):
        for arch in ("bert", "distilbert"):
            for task in TASKS:
                for act, num_labels in (("gelu", 2), ("gelu_new", 3), ("relu", 1)):
                    if task in ("question-answering", "masked-lm") and num_labels != 2:
                        continue
                    if task == "token-classification" and num_labels == 1:
                        continue  # a class per token: no regression
                    with self.subTest(arch=arch, task=task, act=act, num_labels=num_labels):
                        self.assertTrue(ref.gradcheck_model(arch, task, act, num_labels,
                                                            sinusoidal=arch == "distilbert",
                                                            fast=True))

    def test_safetensors_round_trip_and_validation(self):
        d = new_dir("st")
        path = os.path.join(d, "t.safetensors")
        a = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
        ref.write_safetensors(path, {"b": a, "a": a[0]}, {"format": "pt"})
        tensors, metadata = ref.read_safetensors(path)
        self.assertEqual(metadata, {"format": "pt"})
        np.testing.assert_array_equal(tensors["b"], a)
        with open(path, "rb") as f:
            blob = bytearray(f.read())
        with open(path, "wb") as f:
            f.write(blob + b"\0")  # a byte past the data buffer
        with self.assertRaisesRegex(ref.SafetensorsError, "buffer holds"):
            ref.read_safetensors(path)
        x = np.array([1.00390625, 1.01171875, -2.0078125, np.inf], np.float32)
        self.assertEqual(ref.round_to_bf16(x).tolist(), [1.0, 1.015625, -2.0, np.inf])


# ---- fp32 and bf16 against the reference ------------------------------------------

@needs_torch
class AgainstReferenceTest(unittest.TestCase):
    """Every configuration and head of MATRIX, fp32 and bf16 (methods are
    generated below: test_fp32_<config>_<task>, test_bf16_<config>_<task>)."""

    def check_same_parameters(self, model, reference):
        names = [n for n, _ in reference.named_parameters()]
        self.assertEqual(model.tensor_names(), names, "tensor names and state-dict order")
        params = model.parameters()
        for name, p in reference.named_parameters():
            self.assertEqual(tuple(params[name].shape), tuple(p.shape), name)
            np.testing.assert_array_equal(params[name], p.detach().numpy(), err_msg=name)
        self.assertEqual(model.num_parameters(), ref.num_parameters(reference))

    def run_fp32(self, config, task):
        model, reference, _ = created_pair(config, task)
        with model:
            self.check_same_parameters(model, reference)
            batch = batch_for(reference, task)
            loss, logits, grads = c_run(model, batch)
            r = ref.run_batch(reference, **batch)
            r64 = ref.run_batch(reference.double(), **batch)
            reference.float()

            self.assertEqual(logits.shape, r.logits.shape, "logits shape")
            e_logits, e_loss = rel_max(logits, r.logits), rel_loss(loss, r.loss)
            errors = {n: grad_error(n, grads[n], r.grads) for n in r.grads}
            errors64 = {n: grad_error(n, grads[n], r64.grads) for n in r64.grads}
            torch_vs_64 = {n: grad_error(n, r.grads[n], r64.grads) for n in r64.grads}
            REPORT.append(("fp32 %s %s" % (config, task),
                           "loss %.1e logits %.1e grads %s | vs float64: logits %.1e grads %s; "
                           "torch fp32 vs float64 grads %s" % (
                               e_loss, e_logits, worst(errors), rel_max(logits, r64.logits),
                               worst(errors64), worst(torch_vs_64))))
            self.assertLessEqual(e_loss, FP32_LOSS_TOL, "loss %r vs %r" % (loss, r.loss))
            self.assertLessEqual(e_logits, FP32_LOGITS_TOL, "logits")
            bad = {n: e for n, e in errors.items() if not e <= FP32_GRAD_TOL}
            self.assertFalse(bad, "gradients beyond %g: %s" % (FP32_GRAD_TOL, bad))

            # forward() alone gives the same logits and loss.
            model.zero_grad()
            loss2 = model.forward(**batch)
            self.assertLessEqual(rel_loss(loss2, loss), 1e-6, "forward() vs forward_backward() loss")
            self.assertLessEqual(rel_max(model.logits(), logits), 1e-6, "forward() logits")
            self.assertFalse(any(np.any(g != 0) for g in model.grads().values()),
                             "forward() must not touch the gradients")

    def run_bf16(self, config, task):
        model, reference, _ = created_pair(config, task)
        with model:
            model.precision = "bf16"
            self.assertEqual(model.precision, Precision.BF16)
            batch = batch_for(reference, task)
            loss, logits, grads = c_run(model, batch)
            r = ref.run_batch(reference, **batch)
            auto = ref.run_batch(reference, precision="bf16-autocast", **batch)
            emu = ref.run_batch(reference, precision="bf16-emulated", **batch)

            e_logits, e_loss = rel_max(logits, r.logits), rel_loss(loss, r.loss)
            errors = {n: grad_rms_error(n, grads[n], r.grads) for n in r.grads}
            auto_errors = {n: grad_rms_error(n, auto.grads[n], r.grads) for n in r.grads}
            emu_errors = {n: grad_rms_error(n, grads[n], emu.grads) for n in emu.grads}
            REPORT.append(("bf16 %s %s" % (config, task),
                           "vs fp32: loss %.1e logits %.1e grads %s | torch autocast vs fp32: "
                           "loss %.1e logits %.1e grads %s | vs autocast: logits %.1e | "
                           "vs bf16 emulation: loss %.1e logits %.1e grads %s" % (
                               e_loss, e_logits, worst(errors), rel_loss(auto.loss, r.loss),
                               rel_max(auto.logits, r.logits), worst(auto_errors),
                               rel_max(logits, auto.logits), rel_loss(loss, emu.loss),
                               rel_max(logits, emu.logits), worst(emu_errors))))
            self.assertLessEqual(e_loss, BF16_LOSS_TOL, "loss %r vs fp32 %r" % (loss, r.loss))
            self.assertLessEqual(e_logits, BF16_LOGITS_TOL, "logits vs fp32")
            bad = {}
            for n, e in errors.items():
                bound = max(BF16_GRAD_TOL, BF16_GRAD_AUTOCAST_FACTOR * auto_errors[n])
                if not e <= bound:
                    bad[n] = "%.3g > %.3g (autocast %.3g)" % (e, bound, auto_errors[n])
            self.assertFalse(bad, "bf16 gradients: %s" % bad)
            # The bf16 path differs from fp32 at all: it is not silently fp32.
            self.assertGreater(e_logits, 0.0, "bf16 logits equal the fp32 reference exactly")


def _add_matrix_tests():
    for config, tasks in MATRIX:
        for task in tasks:
            suffix = "%s_%s" % (config.replace("-", "_"), task.replace("-", "_"))
            for kind in ("fp32", "bf16"):
                def test(self, config=config, task=task, kind=kind):
                    getattr(self, "run_" + kind)(config, task)
                test.__name__ = "test_%s_%s" % (kind, suffix)
                test.__doc__ = "%s %s %s against the reference" % (kind, config, task)
                setattr(AgainstReferenceTest, test.__name__, test)


_add_matrix_tests()


@needs_torch
@unittest.skipUnless(os.environ.get("CPUTRAIN_SLOW_TESTS"),
                     "bert-base-uncased size: set CPUTRAIN_SLOW_TESTS=1 (about 20 s, 3 GB)")
class BertBaseSizeTest(unittest.TestCase):
    """Full-size shapes (C 768, head size 64, 12 layers, 128 tokens): the
    blocked and AMX kernel paths the tiny configurations do not reach."""

    def test_qa_and_mlm(self):
        for task in ("question-answering", "masked-lm"):
            with self.subTest(task=task):
                model, reference, _ = created_pair("bert-base-uncased", task)
                with model:
                    batch = ref.example_batch(reference.config, batch_size=2, seq_len=128,
                                              task=task, pad_rows=(0, 40))
                    loss, logits, grads = c_run(model, batch)
                    r = ref.run_batch(reference, **batch)
                    errors = {n: grad_error(n, grads[n], r.grads) for n in r.grads}
                    REPORT.append(("fp32 bert-base-uncased %s" % task, "loss %.1e logits %.1e grads %s"
                                   % (rel_loss(loss, r.loss), rel_max(logits, r.logits),
                                      worst(errors))))
                    self.assertLessEqual(rel_loss(loss, r.loss), FP32_LOSS_TOL)
                    self.assertLessEqual(rel_max(logits, r.logits), FP32_LOGITS_TOL)
                    self.assertLessEqual(max(errors.values()), FP32_GRAD_TOL, worst(errors))
                    model.precision = "bf16"
                    loss, logits, grads = c_run(model, batch)
                    self.assertLessEqual(rel_loss(loss, r.loss), BF16_LOSS_TOL)
                    self.assertLessEqual(rel_max(logits, r.logits), BF16_LOGITS_TOL)
                    errors = {n: grad_rms_error(n, grads[n], r.grads) for n in r.grads}
                    self.assertLessEqual(max(errors.values()), BF16_GRAD_TOL, worst(errors))


# ---- heads: labels at the edges ------------------------------------------------------

@needs_torch
class HeadEdgeCaseTest(unittest.TestCase):
    """Label values Transformers treats specially, fp32 against the reference."""

    def compare(self, config, task, **overrides):
        model, reference, _ = created_pair(config, task)
        with model:
            batch = batch_for(reference, task, **overrides)
            loss, logits, grads = c_run(model, batch)
            r = ref.run_batch(reference, **batch)
            REPORT.append(("edge %s %s %s" % (config, task, ",".join(sorted(overrides))),
                           "loss c %.7g ref %.7g" % (loss, r.loss)))
            self.assertLessEqual(rel_loss(loss, r.loss), FP32_LOSS_TOL,
                                 "loss %r vs reference %r" % (loss, r.loss))
            self.assertLessEqual(rel_max(logits, r.logits), FP32_LOGITS_TOL)
            bad = {n: e for n in r.grads for e in [grad_error(n, grads[n], r.grads)]
                   if not e <= FP32_GRAD_TOL}
            self.assertFalse(bad, bad)
            return loss, r.loss

    def test_qa_positions_out_of_range_are_clamped_or_ignored(self):
        T = 12
        for config in ("bert-test", "distilbert-test"):
            with self.subTest(config=config):
                # -3 clamps to 0 (counted); T and beyond clamp to T (ignored);
                # a row may be ignored for its start and counted for its end
                # (row 2's last kept position: padding is never an answer).
                mask = ref.example_batch(config, batch_size=3, seq_len=T)["attention_mask"]
                last = int(mask[2].sum()) - 1
                self.compare(config, "question-answering",
                             start_positions=np.array([-3, T, T + 7], dtype=np.int32),
                             end_positions=np.array([2, 1000, last], dtype=np.int32))

    def test_qa_position_on_padding_is_refused(self):
        T = 12
        model, reference, _ = created_pair("bert-test", "question-answering")
        with model:
            batch = batch_for(reference, "question-answering")
            pad = int(np.argmin(batch["attention_mask"][1]))
            self.assertEqual(batch["attention_mask"][1][pad], 0, "row 1 needs padding")
            batch.update(end_positions=np.array([1, pad, 2], dtype=np.int32))
            with self.assertRaisesRegex(CputrainError, r"end_positions\[1\] = %d is a position "
                                        "the attention mask excludes" % pad):
                c_run(model, batch)
            self.assertLess(pad, T)

    def test_qa_every_position_ignored(self):
        # Transformers' loss is then 0/0 = NaN for both terms; the library
        # must not invent a number (NaN, or an error naming the problem).
        model = Model.create("bert-test", task="question-answering", seed=1)
        with model:
            model.training = False
            batch = ref.example_batch("bert-test", seq_len=8, task="question-answering")
            batch.update(start_positions=np.full(3, 8, np.int32),
                         end_positions=np.full(3, 99, np.int32))
            try:
                loss = model.forward(**batch)
            except CputrainError as e:
                REPORT.append(("edge qa all ignored", "error %s" % e))
                return
            REPORT.append(("edge qa all ignored", "loss %r (Transformers: nan)" % loss))
            self.assertTrue(math.isnan(loss), "loss %r where Transformers gives NaN" % loss)

    def test_mlm_ignore_index(self):
        for config in ("bert-test", "distilbert-test"):
            with self.subTest(config=config):
                model, reference, _ = created_pair(config, "masked-lm")
                model.close()
                labels = batch_for(reference, "masked-lm")["labels"].copy()
                labels[1, :] = -100           # a row with nothing to predict
                labels[0, 0] = reference.config.pad_token_id  # the pad id as a target
                self.compare(config, "masked-lm", labels=labels)
                # a label on a padded position has no logit: refused, by name
                mask = batch_for(reference, "masked-lm")["attention_mask"]
                self.assertEqual(mask[2, -1], 0, "row 2 needs padding")
                labels[2, -1] = 5
                with Model.create(config, task="masked-lm", seed=1) as model:
                    with self.assertRaisesRegex(CputrainError, r"labels\[2\]\[%d\] = 5 is at a "
                                                "position the attention mask excludes"
                                                % (mask.shape[1] - 1)):
                        c_run(model, batch_for(reference, "masked-lm", labels=labels))

    def test_classification_label_counts(self):
        for config in ("bert-3-labels", "distilbert-3-labels"):
            with self.subTest(config=config):
                self.compare(config, "sequence-classification",
                             labels=np.array([2, 0, 1], dtype=np.int32))

    def test_regression_float_labels(self):
        for config in ("bert-regression", "distilbert-regression"):
            with self.subTest(config=config):
                self.compare(config, "sequence-classification",
                             labels=np.array([0.5, -1.25, 3.0], dtype=np.float32))
                # integer targets are regression targets too when num_labels is 1
                self.compare(config, "sequence-classification",
                             labels=np.array([1, 0, 2], dtype=np.int32))

    def test_no_padding_and_no_token_types(self):
        model, reference, _ = created_pair("bert-test", "question-answering")
        with model:
            batch = batch_for(reference, "question-answering")
            batch["attention_mask"] = None
            batch["token_type_ids"] = None
            ids = batch["input_ids"].copy()
            ids[ids == 0] = 3
            batch["input_ids"] = ids
            loss, logits, _ = c_run(model, batch)
            r = ref.run_batch(reference, **batch)
            self.assertLessEqual(rel_max(logits, r.logits), FP32_LOGITS_TOL)
            self.assertLessEqual(rel_loss(loss, r.loss), FP32_LOSS_TOL)

    def test_padding_row_gets_no_lookup_gradient(self):
        # nn.Embedding(padding_idx=pad_token_id): the pad row's gradient has
        # no lookup contributions (only the tied MLM decoder's).
        for config, task in (("bert-test", "question-answering"),
                             ("bert-gelu-new", "question-answering"),
                             ("distilbert-test", "sequence-classification"),
                             ("bert-test", "masked-lm")):
            with self.subTest(config=config, task=task):
                model, reference, _ = created_pair(config, task)
                with model:
                    batch = batch_for(reference, task)
                    _, _, grads = c_run(model, batch)
                    r = ref.run_batch(reference, **batch)
                    name = reference.base_prefix + ".embeddings.word_embeddings.weight"
                    pad = reference.config.pad_token_id
                    self.assertTrue(np.any(batch["input_ids"] == pad))
                    scale = np.max(np.abs(r.grads[name]))
                    err = np.max(np.abs(grads[name][pad] - r.grads[name][pad])) / scale
                    self.assertLessEqual(err, FP32_GRAD_TOL, "row %d of %s: %s vs %s" % (
                        pad, name, grads[name][pad][:4], r.grads[name][pad][:4]))

    def test_distilbert_ignores_token_type_ids(self):
        model, reference, _ = created_pair("distilbert-test", "question-answering")
        with model:
            batch = batch_for(reference, "question-answering")
            _, a, _ = c_run(model, batch, backward=False)
            batch["token_type_ids"] = np.ones_like(batch["token_type_ids"])
            _, b, _ = c_run(model, batch, backward=False)
            np.testing.assert_array_equal(a, b)

    def test_sinusoidal_positions_are_transformers_table_and_frozen(self):
        config = "distilbert-sinusoidal-gelu-new"
        model, reference, _ = created_pair(config, "question-answering")
        with model:
            c = ref.Config.resolve(config_arg(config))
            table = ref.sinusoidal_table(c.max_position_embeddings, c.hidden_size)
            name = "distilbert.embeddings.position_embeddings.weight"
            err = np.max(np.abs(model.parameters()[name] - table))
            REPORT.append(("sinusoidal table", "max abs difference from Transformers' %.1e" % err))
            self.assertLessEqual(err, 1e-6)
            _, _, grads = c_run(model, batch_for(reference, "question-answering"))
            self.assertFalse(np.any(grads[name] != 0), "the sinusoidal table must get no gradient")


# ---- accumulation, loss scale, threads ----------------------------------------------

@needs_torch
class AccumulationTest(unittest.TestCase):

    def test_loss_scale_and_accumulation(self):
        model, reference, _ = created_pair("bert-test", "masked-lm")
        with model:
            batch = batch_for(reference, "masked-lm")
            r = ref.run_batch(reference, **batch)
            model.zero_grad()
            model.forward_backward(loss_scale=0.25, **batch)
            model.forward_backward(loss_scale=0.75, **batch)
            grads = model.grads()
            for name in r.grads:
                self.assertLessEqual(grad_error(name, grads[name], r.grads), FP32_GRAD_TOL, name)
            model.forward_backward(**batch)  # accumulates: now twice the gradient
            doubled = {n: 2 * g for n, g in r.grads.items()}
            for name in r.grads:
                self.assertLessEqual(grad_error(name, grads[name], doubled), FP32_GRAD_TOL, name)
            model.zero_grad()
            self.assertFalse(any(np.any(g != 0) for g in grads.values()))

    def test_threads_do_not_change_the_result(self):
        model, reference, _ = created_pair("bert-gelu-new", "question-answering")
        with model:
            batch = batch_for(reference, "question-answering")
            results = []
            for threads in (1, 2, 3):
                model.threads = threads
                results.append(c_run(model, batch))
            for (loss, logits, grads), threads in zip(results[1:], (2, 3)):
                same = (loss == results[0][0] and np.array_equal(logits, results[0][1])
                        and all(np.array_equal(grads[n], results[0][2][n]) for n in grads))
                REPORT.append(("threads 1 vs %d" % threads, "bit-identical" if same else
                               "loss %.1e logits %.1e" % (rel_loss(loss, results[0][0]),
                                                          rel_max(logits, results[0][1]))))
                self.assertLessEqual(rel_loss(loss, results[0][0]), 1e-6)
                self.assertLessEqual(rel_max(logits, results[0][1]), 1e-6)


# ---- Hugging Face folders written by the reference ----------------------------------

@needs_torch
class ReferenceFolderTest(unittest.TestCase):
    """The reference writes config.json + model.safetensors as
    save_pretrained does; the library loads them and gives the same logits."""

    def load_and_compare(self, reference, folder, task, tol=FP32_LOGITS_TOL):
        with Model.load(folder, task=task, seed=3) as model:
            model.training = False
            self.assertEqual(model.new_tensors(), [])
            self.assertEqual(model.architecture, reference.architecture)
            batch = batch_for(reference, task)
            loss, logits, grads = c_run(model, batch)
            r = ref.run_batch(reference, **batch)
            self.assertLessEqual(rel_max(logits, r.logits), tol, "logits")
            self.assertLessEqual(rel_loss(loss, r.loss), tol, "loss")
            bad = {n: e for n in r.grads for e in [grad_error(n, grads[n], r.grads)]
                   if not e <= FP32_GRAD_TOL}
            self.assertFalse(bad, bad)
            return model.parameters()

    def test_every_head(self):
        for config in ("bert-test", "distilbert-test", "bert-gelu-new",
                       "distilbert-sinusoidal-gelu-new"):
            for task in TASKS:
                with self.subTest(config=config, task=task):
                    reference = ref.build_model(config_arg(config), task, seed=7)
                    folder = new_dir("ref-%s-%s" % (config, task))
                    ref.save_pretrained(reference, folder)
                    params = self.load_and_compare(reference, folder, task)
                    del params

    def test_names_without_prefix_and_sharded(self):
        for config in ("bert-test", "distilbert-test"):
            reference = ref.build_model(config, "question-answering", seed=8)
            for kind, kwargs in (("no-prefix", dict(drop_prefix=True)), ("sharded", dict(shards=3))):
                with self.subTest(config=config, kind=kind):
                    folder = new_dir("ref-%s-%s" % (config, kind))
                    ref.save_pretrained(reference, folder, **kwargs)
                    self.load_and_compare(reference, folder, "question-answering")

    def test_bf16_and_f16_files(self):
        reference = ref.build_model("bert-test", "sequence-classification", seed=9)
        for dtype, rounding in (("BF16", ref.round_to_bf16),
                                ("F16", lambda a: a.astype(np.float16).astype(np.float32))):
            with self.subTest(dtype=dtype):
                folder = new_dir("ref-" + dtype)
                ref.save_pretrained(reference, folder, dtype=dtype)
                with Model.load(folder, task="sequence-classification") as model:
                    params = model.parameters()
                    for name, value in ref.state_dict_numpy(reference).items():
                        np.testing.assert_array_equal(params[name], rounding(value), err_msg=name)

    def test_missing_head_is_initialised_and_other_heads_ignored(self):
        # An encoder saved with the MLM head, loaded for question answering:
        # qa_outputs is new, cls.* is ignored, as from_pretrained does.
        for arch in ("bert", "distilbert"):
            with self.subTest(arch=arch):
                reference = ref.build_model(arch + "-test", "masked-lm", seed=10)
                folder = new_dir("ref-mlm-" + arch)
                ref.save_pretrained(reference, folder)
                with Model.load(folder, task="question-answering", seed=11) as model:
                    self.assertEqual(sorted(model.new_tensors()),
                                     ["qa_outputs.bias", "qa_outputs.weight"])
                    encoder = ref.state_dict_numpy(reference)
                    params = model.parameters()
                    for name in model.tensor_names():
                        if name in encoder:
                            np.testing.assert_array_equal(params[name], encoder[name], err_msg=name)
                    self.assertTrue(np.all(params["qa_outputs.bias"] == 0))
                    std = float(np.std(params["qa_outputs.weight"]))
                    self.assertTrue(0.01 < std < 0.03,
                                    "qa_outputs.weight std %g (initializer_range 0.02)" % std)

    def test_extra_tensors_like_old_checkpoints(self):
        # bert-base-uncased's checkpoint also holds the pooler, the NSP head
        # and (older files) the int64 position_ids buffer: ignored for QA.
        reference = ref.build_model("bert-test", "question-answering", seed=12)
        folder = new_dir("ref-extra")
        ref.save_pretrained(reference, folder)
        path = os.path.join(folder, "model.safetensors")
        tensors, _ = ref.read_safetensors(path)
        C = reference.config.hidden_size
        tensors["bert.pooler.dense.weight"] = np.ones((C, C), np.float32)
        tensors["bert.pooler.dense.bias"] = np.ones(C, np.float32)
        tensors["cls.seq_relationship.weight"] = np.ones((2, C), np.float32)
        tensors["cls.seq_relationship.bias"] = np.ones(2, np.float32)
        raw = {n: ref.encode_tensor(t) for n, t in tensors.items()}
        raw["bert.embeddings.position_ids"] = ref.encode_tensor(
            np.arange(reference.config.max_position_embeddings, dtype=np.int64)[None], None)
        ref.write_safetensors(path, raw, {"format": "pt"})
        self.load_and_compare(reference, folder, "question-answering")


# ---- what the library writes ----------------------------------------------------------

@needs_torch
class SavedFolderTest(unittest.TestCase):
    """The library's folder, read with the reference's strict reader."""

    def test_files_as_transformers_writes_them(self):
        for config, task in (("bert-test", "masked-lm"), ("distilbert-test", "masked-lm"),
                             ("bert-3-labels", "sequence-classification"),
                             ("distilbert-sinusoidal-gelu-new", "question-answering")):
            with self.subTest(config=config, task=task):
                with Model.create(config_arg(config), task=task, seed=5) as model:
                    folder = new_dir("saved")
                    model.save(folder)
                    raw, metadata = ref.read_safetensors_raw(os.path.join(folder, "model.safetensors"))
                    self.assertEqual(metadata, {"format": "pt"})
                    self.assertEqual(sorted(raw), sorted(model.tensor_names()))
                    tied = [n for n in raw if "decoder" in n or n == "vocab_projector.weight"]
                    self.assertFalse(tied, "tied weights are not saved")
                    self.assertEqual({t.dtype for t in raw.values()}, {"F32"})
                    with open(os.path.join(folder, "config.json")) as f:
                        cfg = json.load(f)
                    self.assertEqual(cfg["architectures"], [model.architecture])
                    self.assertEqual(cfg["model_type"], config.split("-")[0])
                    again = ref.Config.from_dict(cfg)
                    self.assertEqual(again.num_labels, model.config_int("num_labels"))
                    self.assertEqual(again.hidden_size, model.config_int("hidden_size"))

    def test_bf16_and_f16_saves_round_to_nearest_even(self):
        with Model.create("bert-test", task="question-answering", seed=6) as model:
            params = model.parameters()
            # Values on rounding boundaries: ties go to even.
            w = params["qa_outputs.weight"]
            w[0, :4] = np.array([1.00390625, 1.01171875, -2.0078125, 3.0e-39], np.float32)
            model.params_changed()
            for dtype, name, bits in (("bfloat16", "BF16", lambda a: ref.f32_to_bf16_bits(a)),
                                      ("float16", "F16",
                                       lambda a: a.astype(np.float16).view(np.uint16))):
                with self.subTest(dtype=dtype):
                    folder = new_dir("saved-" + dtype)
                    model.save(folder, dtype=dtype)
                    raw, _ = ref.read_safetensors_raw(os.path.join(folder, "model.safetensors"))
                    for n in model.tensor_names():
                        self.assertEqual(raw[n].dtype, name, n)
                        got = np.frombuffer(raw[n].data, dtype="<u2").reshape(raw[n].shape)
                        np.testing.assert_array_equal(got, bits(np.asarray(params[n])), err_msg=n)


# ---- no PyTorch needed ------------------------------------------------------------------

class SaveLoadTest(unittest.TestCase):
    """save -> load -> save gives the same bytes."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="cputrain-roundtrip-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def read(self, *parts):
        with open(os.path.join(self.dir, *parts), "rb") as f:
            return f.read()

    def test_round_trip_is_byte_identical(self):
        for config in ("bert-test", "distilbert-test"):
            for task in TASKS:
                for dtype in ("float32", "bfloat16", "float16"):
                    with self.subTest(config=config, task=task, dtype=dtype):
                        first, second = ["%s-%s-%s-%d" % (config, task, dtype, i) for i in (1, 2)]
                        for d in (first, second):
                            os.mkdir(os.path.join(self.dir, d))
                        with Model.create(config, task=task, seed=21) as model:
                            model.save(os.path.join(self.dir, first), dtype=dtype)
                        with Model.load(os.path.join(self.dir, first), task=task) as model:
                            self.assertEqual(model.new_tensors(), [])
                            model.save(os.path.join(self.dir, second), dtype=dtype)
                        for name in ("model.safetensors", "config.json"):
                            self.assertEqual(self.read(first, name), self.read(second, name),
                                             "%s differs after save -> load -> save" % name)


class TrainModeTest(unittest.TestCase):
    """Dropout from a counter-based generator: a (seed, step) is reproducible."""

    def setUp(self):
        self.model = Model.create("bert-test", task="masked-lm", seed=4)
        ids = [[(7 * b + 3 * t) % 120 + 5 for t in range(10)] for b in range(2)]
        mask = [[1] * 10, [1] * 7 + [0] * 3]
        labels = [[ids[b][t] if t % 3 == 1 and mask[b][t] else -100 for t in range(10)]
                  for b in range(2)]
        self.batch = dict(input_ids=ids, attention_mask=mask,
                          labels=labels)

    def tearDown(self):
        self.model.close()

    def loss(self, seed=None, step=None, precision="fp32"):
        self.model.precision = precision
        if seed is not None:
            self.model.set_seed(seed, step)
        self.model.zero_grad()
        return self.model.forward_backward(**self.batch)

    def test_a_new_model_trains(self):
        self.assertTrue(self.model.training)

    def test_same_seed_and_step_same_loss(self):
        for precision in ("fp32", "bf16"):
            with self.subTest(precision=precision):
                a = self.loss(1234, 7, precision)
                grads_a = {n: g.copy() for n, g in self.model.grads().items()} if _np_ok() else None
                b = self.loss(1234, 7, precision)
                self.assertEqual(a, b)
                if grads_a is not None:
                    for n, g in self.model.grads().items():
                        self.assertTrue((g == grads_a[n]).all(), n)
                self.assertNotEqual(a, self.loss(1234, 8, precision), "another step, other dropout")
                self.assertNotEqual(a, self.loss(1235, 7, precision), "another seed, other dropout")

    def test_the_step_advances_with_every_training_pass(self):
        self.loss(99, 5)
        second = self.loss()
        self.assertEqual(second, self.loss(99, 6))
        self.assertNotEqual(self.loss(99, 5), self.loss(99, 6))

    def test_eval_mode_has_no_dropout(self):
        train = self.loss(1, 0)
        self.model.training = False
        a, b = self.loss(), self.loss(5, 5)
        self.assertEqual(a, b, "eval mode does not depend on the seed")
        self.assertNotEqual(a, train)
        self.model.training = True
        self.assertEqual(self.loss(1, 0), train)


def _np_ok():
    return importlib.util.find_spec("numpy") is not None


if __name__ == "__main__":
    unittest.main()
