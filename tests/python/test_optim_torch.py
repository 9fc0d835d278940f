"""The optimizer (ct_optim, through the Python binding) against PyTorch:
torch.optim.AdamW, torch.nn.utils.clip_grad_norm_ and
torch.optim.lr_scheduler.LambdaLR driven by Transformers' six schedule
formulas, written out below from transformers/optimization.py
(get_scheduler's linear, cosine, cosine_with_restarts, polynomial,
constant, constant_with_warmup; warmup = warmup_steps when above 0, else
ceil(num_training_steps * warmup_ratio), as TrainingArguments.get_warmup_steps).

Both optimizers see the SAME gradients: the library's "bert-test" model
computes them each micro-step (gradient accumulation 2: two
forward_backward calls with loss_scale 1/2), they are copied into the
torch parameters, then each side clips and steps. Decay applies only to
the tensors the library marks as decaying, as Trainer's two parameter
groups. After 20 optimizer steps every parameter and both Adam moments
are compared.

Norm: for each tensor, max|c - r| / max|r| (the error relative to the
tensor's largest value; r is PyTorch; exp_avg against the larger of that
and max sqrt(exp_avg_sq), see first_moment_error), the worst over all tensors; the
learning-rate sequence the same way over the sequence; the gradient norm
|c - r| / |r|. Tolerance 1e-6 (fp32).

CPUTRAIN_REPORT=1 prints every figure at the end. Tests that need PyTorch
skip (saying why) only when `import torch` fails.
"""

import json
import math
import os
import shutil
import struct
import sys
import tempfile
import unittest

try:
    import torch
    TORCH_MISSING = None
except ImportError as e:
    torch = None
    TORCH_MISSING = ("`import torch` failed (%s): the optimizer is not compared with "
                     "torch.optim.AdamW; run with Debian's /usr/bin/python3 (python3-torch)" % e)

if torch is not None:
    import numpy as np  # noqa: E402  (PyTorch there: numpy must be too)
else:
    np = None

from cputrain import CputrainError, Model, Optimizer, Status, TrainingArgs  # noqa: E402

needs_torch = unittest.skipIf(TORCH_MISSING is not None, TORCH_MISSING or "")

TOL = 1e-6
STEPS = 20
ACCUMULATION = 2
SCHEDULES = ("linear", "cosine", "cosine_with_restarts", "polynomial", "constant",
             "constant_with_warmup")
REPORT = []  # (what, figures) for CPUTRAIN_REPORT


def tearDownModule():
    if os.environ.get("CPUTRAIN_REPORT") and REPORT:
        width = max(len(what) for what, _ in REPORT)
        sys.stderr.write("\n---- optimizer vs torch.optim.AdamW + LambdaLR (CPUTRAIN_REPORT)\n")
        for what, figures in REPORT:
            sys.stderr.write("%-*s  %s\n" % (width, what, figures))


# ---- Transformers' schedules (src/transformers/optimization.py) -----------------

def warmup_for(total, warmup_steps, warmup_ratio):
    """TrainingArguments.get_warmup_steps."""
    return warmup_steps if warmup_steps > 0 else math.ceil(total * warmup_ratio)


def hf_lambda(name, num_warmup_steps, num_training_steps, lr_init):
    """The lr_lambda get_scheduler(name, ...) hands to LambdaLR."""
    if name == "constant":
        return lambda _: 1

    if name == "constant_with_warmup":
        def f(current_step):
            if current_step < num_warmup_steps:
                return float(current_step) / float(max(1.0, num_warmup_steps))
            return 1.0
        return f

    if name == "linear":
        def f(current_step):
            if current_step < num_warmup_steps:
                return float(current_step) / float(max(1, num_warmup_steps))
            return max(0.0, float(num_training_steps - current_step)
                       / float(max(1, num_training_steps - num_warmup_steps)))
        return f

    if name == "cosine":
        num_cycles = 0.5

        def f(current_step):
            if current_step < num_warmup_steps:
                return float(current_step) / float(max(1, num_warmup_steps))
            progress = (float(current_step - num_warmup_steps)
                        / float(max(1, num_training_steps - num_warmup_steps)))
            return max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress)))
        return f

    if name == "cosine_with_restarts":
        num_cycles = 1

        def f(current_step):
            if current_step < num_warmup_steps:
                return float(current_step) / float(max(1, num_warmup_steps))
            progress = (float(current_step - num_warmup_steps)
                        / float(max(1, num_training_steps - num_warmup_steps)))
            if progress >= 1.0:
                return 0.0
            return max(0.0, 0.5 * (1.0 + math.cos(math.pi * ((float(num_cycles) * progress) % 1.0))))
        return f

    if name == "polynomial":
        lr_end, power = 1e-7, 1.0
        if not lr_init > lr_end:
            raise ValueError("lr_end (%g) must be smaller than initial lr (%g)" % (lr_end, lr_init))

        def f(current_step):
            if current_step < num_warmup_steps:
                return float(current_step) / float(max(1, num_warmup_steps))
            elif current_step > num_training_steps:
                return lr_end / lr_init
            else:
                lr_range = lr_init - lr_end
                decay_steps = num_training_steps - num_warmup_steps
                pct_remaining = 1 - (current_step - num_warmup_steps) / decay_steps
                decay = lr_range * pct_remaining ** power + lr_end
                return decay / lr_init
        return f

    raise KeyError(name)


def rel_max(c, r):
    """max|c - r| / max|r| (0 when both are all zero)."""
    c, r = np.asarray(c, dtype=np.float64), np.asarray(r, dtype=np.float64)
    diff = float(np.max(np.abs(c - r))) if c.size else 0.0
    scale = float(np.max(np.abs(r))) if r.size else 0.0
    if scale == 0.0:
        return 0.0 if diff == 0.0 else math.inf
    return diff / scale


def first_moment_error(c, r, r_sq):
    """max|c - r| over the larger of max|r| and max sqrt(r_sq): exp_avg
    against the scale the update divides it by. A tensor whose gradient is
    zero but for rounding (qa_outputs.bias: the logits' gradients over the
    positions sum to 0) has an exp_avg of rounding noise (~1e-10 where
    sqrt(exp_avg_sq) is ~1e-9), and against its own max one rounding
    apart is a relative 1e-6 (seen on a Zen 3 CPU)."""
    c, r = np.asarray(c, dtype=np.float64), np.asarray(r, dtype=np.float64)
    scale = max(float(np.max(np.abs(r))) if r.size else 0.0,
                float(np.max(np.sqrt(np.asarray(r_sq, dtype=np.float64)))) if r.size else 0.0)
    diff = float(np.max(np.abs(c - r))) if c.size else 0.0
    if scale == 0.0:
        return 0.0 if diff == 0.0 else math.inf
    return diff / scale


# ---- reading the optimizer's safetensors file (to compare the moments) ------------

def read_safetensors(path):
    """{name: float32 array} from a safetensors file of F32 tensors."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (name, info["dtype"])
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(body[begin:end], dtype="<f4").reshape(info["shape"])
    return out, header.get("__metadata__", {})


# ---- the comparison ---------------------------------------------------------------

B, T = 4, 16


def make_batches(count, seed):
    """`count` question-answering batches of random tokens and positions."""
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(count):
        ids = rng.integers(1, 128, size=(B, T), dtype=np.int32)
        types = (np.arange(T)[None, :] >= rng.integers(4, T, size=(B, 1))).astype(np.int32)
        mask = np.ones((B, T), np.int32)
        mask[0, T - 3:] = 0
        starts = rng.integers(0, T - 3, size=B, dtype=np.int32)
        # row 0 keeps T - 3 positions; an answer is never padding
        ends = np.minimum(starts + rng.integers(0, 4, size=B, dtype=np.int32), T - 4)
        batches.append((ids, types, mask, starts, ends))
    return batches


def run_both(schedule, lr=2e-3, weight_decay=0.1, max_grad_norm=0.5, warmup_steps=0,
             warmup_ratio=0.0, total=STEPS, steps=STEPS, seed=5, moments_dir=None):
    """Train the library's optimizer and torch's side by side on the same
    gradients. Returns a dict of figures and both sides' state."""
    args = TrainingArgs(learning_rate=lr, weight_decay=weight_decay, adam_beta1=0.85,
                        adam_beta2=0.99, adam_epsilon=1e-7, max_grad_norm=max_grad_norm,
                        lr_scheduler_type=schedule, warmup_steps=warmup_steps,
                        warmup_ratio=warmup_ratio)
    model = Model.create("bert-test", task="question-answering", seed=seed)
    model.training = False  # no dropout: nothing here depends on it
    opt = Optimizer(model, args)
    opt.set_total_steps(total)

    names = model.tensor_names()
    infos = {n: model.tensor_info(n) for n in names}
    params = model.parameters()
    start = {n: np.array(params[n]) for n in names}
    tparams = {n: torch.nn.Parameter(torch.tensor(np.array(params[n]), dtype=torch.float32))
               for n in names}
    decay = [tparams[n] for n in names if infos[n].decays]
    no_decay = [tparams[n] for n in names if not infos[n].decays]
    assert decay and no_decay
    topt = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=lr, betas=(0.85, 0.99), eps=1e-7, weight_decay=weight_decay)
    warmup = warmup_for(total, warmup_steps, warmup_ratio)
    sched = torch.optim.lr_scheduler.LambdaLR(topt, hf_lambda(schedule, warmup, total, lr))

    batches = make_batches(steps * ACCUMULATION, seed)
    grads = model.grads()
    lr_c, lr_r, norm_errors, clipped = [], [], [], 0
    for step in range(steps):
        lr_c.append(opt.lr)
        lr_r.append(sched.get_last_lr()[0])
        assert opt.step_count == step
        for micro in range(ACCUMULATION):
            ids, types, mask, starts, ends = batches[step * ACCUMULATION + micro]
            model.forward_backward(ids, types, mask, start_positions=starts,
                                   end_positions=ends, loss_scale=1.0 / ACCUMULATION)
        for n in names:
            tparams[n].grad = torch.tensor(np.array(grads[n]), dtype=torch.float32)
        norm_c = opt.step()  # clips, steps, zeroes the library's gradients
        norm_r = float(torch.nn.utils.clip_grad_norm_(list(tparams.values()), max_grad_norm))
        topt.step()
        sched.step()
        norm_errors.append(abs(norm_c - norm_r) / norm_r)
        clipped += norm_r > max_grad_norm
        assert all(float(np.max(np.abs(grads[n]))) == 0.0 for n in names), "grads zeroed"

    param_errors = {n: rel_max(params[n], tparams[n].detach().numpy()) for n in names}
    moment_errors = {}
    if moments_dir is not None:
        path = os.path.join(moments_dir, schedule + ".safetensors")
        opt.save(path)
        saved, meta = read_safetensors(path)
        assert int(meta["step"]) == steps, meta
        for n in names:
            state = topt.state[tparams[n]]
            moment_errors["exp_avg." + n] = first_moment_error(
                saved["exp_avg." + n], state["exp_avg"].numpy(), state["exp_avg_sq"].numpy())
            moment_errors["exp_avg_sq." + n] = rel_max(saved["exp_avg_sq." + n],
                                                      state["exp_avg_sq"].numpy())
    result = {
        "params": param_errors,
        "moments": moment_errors,
        "lr": rel_max(lr_c, lr_r),
        "lr_values": lr_r,
        "grad_norm": max(norm_errors),
        "clipped": clipped,
        "warmup": warmup,
        # How far training moved the weights (relative, per tensor, the
        # smallest): the comparison means something only if they did move.
        "moved": min(rel_max(params[n], start[n]) for n in names if infos[n].decays),
    }
    opt.close()
    model.close()
    args.close()
    return result


def worst(errors):
    name = max(errors, key=errors.get)
    return errors[name], name


@needs_torch
class AdamWAgainstTorchTest(unittest.TestCase):
    """20 optimizer steps with weight decay, warmup, clipping and gradient
    accumulation, per schedule: parameters and moments as PyTorch's."""

    @classmethod
    def setUpClass(cls):
        torch.manual_seed(0)
        cls.dir = tempfile.mkdtemp(prefix="cputrain-optim-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def check_schedule(self, schedule, **kw):
        r = run_both(schedule, moments_dir=self.dir, **kw)
        p_err, p_name = worst(r["params"])
        m_err, m_name = worst(r["moments"])
        REPORT.append(("%s (warmup %d)" % (schedule, r["warmup"]),
                       "params %.2e (%s)  moments %.2e (%s)  lr %.2e  grad_norm %.2e  "
                       "clipped %d/%d" % (p_err, p_name, m_err, m_name, r["lr"],
                                          r["grad_norm"], r["clipped"], STEPS)))
        self.assertEqual(r["clipped"], STEPS, "max_grad_norm must be small enough to clip")
        self.assertGreater(r["warmup"], 0)
        self.assertEqual(r["lr_values"][0], 0.0 if schedule != "constant" else 2e-3)
        self.assertLessEqual(r["lr"], TOL, "learning rates %s" % schedule)
        self.assertLessEqual(r["grad_norm"], TOL, "gradient norm %s" % schedule)
        self.assertLessEqual(p_err, TOL, "parameter %s, %s" % (p_name, schedule))
        self.assertLessEqual(m_err, TOL, "moment %s, %s" % (m_name, schedule))
        self.assertGreater(r["moved"], 1000 * TOL, "the weights must have moved")
        return r

    # warmup_steps for some, warmup_ratio (rounded up: 20 * 0.16 = 3.2 -> 4,
    # 20 * 0.12 = 2.4 -> 3) for the others.
    def test_linear(self):
        self.check_schedule("linear", warmup_steps=3)

    def test_cosine(self):
        self.check_schedule("cosine", warmup_ratio=0.16)

    def test_cosine_with_restarts(self):
        self.check_schedule("cosine_with_restarts", warmup_steps=5)

    def test_polynomial(self):
        self.check_schedule("polynomial", warmup_ratio=0.12)

    def test_constant(self):
        # Transformers' "constant" ignores warmup; so must the library.
        self.check_schedule("constant", warmup_steps=3)

    def test_constant_with_warmup(self):
        self.check_schedule("constant_with_warmup", warmup_steps=3)


@needs_torch
class ScheduleAgainstLambdaLRTest(unittest.TestCase):
    """The learning rate at every step, past the end of training too, as
    LambdaLR.get_last_lr() with Transformers' lambdas."""

    # (total, warmup_steps, warmup_ratio). 25 * 0.28 is 7.000000000000001 in
    # binary: ceil makes 8 warmup steps, in Transformers as it must here.
    CASES = [
        (20, 0, 0.0), (20, 3, 0.0), (20, 0, 0.15), (25, 0, 0.28), (7, 0, 0.5),
        (1, 0, 0.0), (10, 30, 0.0), (100, 6, 0.3),
    ]

    def test_every_schedule(self):
        lr = 3e-4
        worst_by_schedule = {}
        with Model.create("bert-test") as model:
            for schedule in SCHEDULES:
                for total, warmup_steps, warmup_ratio in self.CASES:
                    warmup = warmup_for(total, warmup_steps, warmup_ratio)
                    if schedule == "polynomial" and warmup == total:
                        continue  # Transformers divides by zero here
                    with self.subTest(schedule=schedule, total=total, warmup=warmup):
                        args = TrainingArgs(learning_rate=lr, lr_scheduler_type=schedule,
                                            warmup_steps=warmup_steps, warmup_ratio=warmup_ratio)
                        with Optimizer(model, args) as opt:
                            opt.set_total_steps(total)
                            dummy = torch.nn.Parameter(torch.zeros(1))
                            sgd = torch.optim.SGD([dummy], lr=lr)
                            sched = torch.optim.lr_scheduler.LambdaLR(
                                sgd, hf_lambda(schedule, warmup, total, lr))
                            ours, theirs = [], []
                            for step in range(total + 12):
                                ours.append(opt.lr_at(step))
                                theirs.append(sched.get_last_lr()[0])
                                sgd.step()
                                sched.step()
                            self.assertEqual(opt.lr, ours[0], "lr before any step is lr_at(0)")
                            err = rel_max(ours, theirs)
                            key = schedule
                            worst_by_schedule[key] = max(worst_by_schedule.get(key, 0.0), err)
                            self.assertLessEqual(err, TOL, list(zip(ours, theirs)))
                        args.close()
        for schedule, err in worst_by_schedule.items():
            REPORT.append(("lr sequence %s" % schedule, "%.2e over %d cases"
                           % (err, len(self.CASES))))

    def test_warmup_count(self):
        # The first step at full rate under constant_with_warmup is the warmup.
        with Model.create("bert-test") as model:
            for total, ratio in ((20, 0.15), (25, 0.28), (100, 0.07), (10, 0.05), (3, 0.99)):
                with TrainingArgs(learning_rate=1.0, lr_scheduler_type="constant_with_warmup",
                                  warmup_ratio=ratio) as args, Optimizer(model, args) as opt:
                    opt.set_total_steps(total)
                    first_full = next(s for s in range(total + 2) if opt.lr_at(s) == 1.0)
                    self.assertEqual(first_full, math.ceil(total * ratio), (total, ratio))


class OptimizerBindingTest(unittest.TestCase):
    """What the binding adds around ct_optim (no PyTorch needed)."""

    def setUp(self):
        self.model = Model.create("bert-test", seed=2)
        self.model.training = False
        self.args = TrainingArgs(learning_rate=1e-3, max_grad_norm=1.0)

    def tearDown(self):
        self.model.close()
        self.args.close()

    def backward(self):
        return self.model.forward_backward([[2, 17, 33, 5, 9, 3]], start_positions=[1],
                                           end_positions=[3])

    def test_needs_total_steps(self):
        with Optimizer(self.model, self.args) as opt:
            self.backward()
            with self.assertRaises(CputrainError) as cm:
                opt.step()
            self.assertEqual(cm.exception.status, Status.ERR_STATE)
            self.assertIn("ct_optim_set_total_steps", cm.exception.message)
            with self.assertRaises(CputrainError):
                opt.set_total_steps(0)
            with self.assertRaisesRegex(TypeError, "total_steps must be an int"):
                opt.set_total_steps(2.5)

    def test_step_returns_the_norm_and_counts(self):
        with Optimizer(self.model, self.args) as opt:
            opt.set_total_steps(10)
            self.backward()
            norm = opt.grad_norm()
            self.assertGreater(norm, 0)
            self.assertEqual(opt.step(), norm)
            self.assertEqual(opt.step_count, 1)
            self.assertEqual(opt.grad_norm(), 0.0, "step zeroes the gradients")
            self.assertEqual(opt.lr, opt.lr_at(1))
            self.assertAlmostEqual(opt.lr_at(0), 1e-3)
            self.assertRegex(repr(opt), r"<Optimizer AdamW, step 1, lr 0\.0009")

    def test_non_finite_gradient_raises_with_the_norm(self):
        with Optimizer(self.model, self.args) as opt:
            opt.set_total_steps(10)
            before = bytes(memoryview(self.model.parameters()["qa_outputs.weight"]).cast("B"))
            self.backward()
            self.model.grads()["qa_outputs.bias"][0] = float("nan")
            with self.assertRaises(CputrainError) as cm:
                opt.step()
            self.assertEqual(cm.exception.status, Status.ERR_NUMERIC)
            self.assertEqual(cm.exception.status_name, "CT_ERR_NUMERIC")
            self.assertTrue(math.isnan(cm.exception.grad_norm))
            self.assertEqual(opt.step_count, 0, "the step is not counted")
            self.assertEqual(opt.grad_norm(), 0.0, "the gradients are zeroed")
            self.assertEqual(
                bytes(memoryview(self.model.parameters()["qa_outputs.weight"]).cast("B")), before,
                "nothing applied")

    def test_set_decay_save_load(self):
        d = tempfile.mkdtemp(prefix="cputrain-optim-")
        try:
            with Optimizer(self.model, self.args) as opt:
                opt.set_total_steps(10)
                opt.set_decay("qa_outputs.bias", True)
                opt.set_decay(0, False)
                with self.assertRaises(CputrainError) as cm:
                    opt.set_decay(10 ** 6, True)
                self.assertIn("tensors", cm.exception.message)
                with self.assertRaises(CputrainError):
                    opt.set_decay("qa_outputs.kernel", True)
                with self.assertRaisesRegex(TypeError, "decays must be True or False"):
                    opt.set_decay(0, 1)
                self.backward()
                opt.step()
                path = os.path.join(d, "optimizer.safetensors")
                opt.save(path)
            with Optimizer(self.model, self.args) as fresh:
                fresh.load(path)
                self.assertEqual(fresh.step_count, 1)
                self.assertEqual(fresh.lr, fresh.lr_at(1))
                with self.assertRaises(CputrainError) as cm:
                    fresh.load(os.path.join(d, "absent.safetensors"))
                self.assertIn("absent.safetensors", cm.exception.message)
            with Model.create("distilbert-test") as other, Optimizer(other, self.args) as wrong:
                with self.assertRaises(CputrainError) as cm:
                    wrong.load(path)
                self.assertEqual(cm.exception.status, Status.ERR_FORMAT)
        finally:
            shutil.rmtree(d)

    def test_lifetime(self):
        opt = Optimizer(self.model, self.args)
        opt.close()
        opt.close()
        self.assertEqual(repr(opt), "<closed Optimizer>")
        with self.assertRaisesRegex(ValueError, "closed Optimizer"):
            opt.lr
        m = Model.create("bert-test")
        opt = Optimizer(m, self.args)
        m.close()
        with self.assertRaisesRegex(ValueError, "Model of this Optimizer was closed"):
            opt.step()
        opt.close()
        with self.assertRaisesRegex(TypeError, "needs a cputrain.Model"):
            Optimizer("bert-test", self.args)
        with self.assertRaisesRegex(TypeError, "needs cputrain.TrainingArgs"):
            Optimizer(self.model, {"learning_rate": 1e-3})


if __name__ == "__main__":
    unittest.main()
