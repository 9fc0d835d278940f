#!/usr/bin/python3
"""Times training steps (forward + backward) of the PyTorch reference BERT in
tests/ref/torch_bert.py — the same architecture and head as the library;
question answering, or with --task the other heads, labelled as
cputrain-bench labels them (masked LM: one token in seven; sequence
classification: two classes; token classification: two classes, none on
each sequence's first and last token and on one token in four, as run_ner
leaves [CLS], [SEP] and words' later pieces) —
in fp32 and under CPU autocast bf16 (what Trainer does with --bf16 --use_cpu),
and prints one line per precision: "torch <precision> median <seconds>".
A benchmark: it prints figures and judges nothing.

With --optimizer each step is Trainer's whole optimizer step: zero_grad,
forward under autocast, backward, clip_grad_norm_(max_grad_norm 1.0),
torch.optim.AdamW and the linear schedule; the line then adds samples/s
over the timed steps and the process's peak RSS (getrusage).

usage: torch_bert_step.py [--model NAME] [--task question-answering|masked-lm|
                          sequence-classification|token-classification]
                          [--batch B] [--seq T] [--steps N] [--warmup W]
                          [--threads N] [--precision fp32|bf16 ...] [--optimizer]"""
import argparse
import contextlib
import os
import resource
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ref"))
import torch_bert  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="bert-base-uncased")
    p.add_argument("--task", choices=["question-answering", "masked-lm",
                                      "sequence-classification", "token-classification"],
                   default="question-answering")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--precision", nargs="+", default=["bf16", "fp32"])
    p.add_argument("--optimizer", action="store_true")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    model = torch_bert.build_model(a.model, a.task, seed=0)
    model.train()
    g = torch.Generator().manual_seed(1)
    vocab = torch_bert.Config.resolve(a.model).vocab_size
    ids = torch.randint(1, vocab, (a.batch, a.seq), generator=g)
    mask = torch.ones_like(ids)
    start = torch.randint(0, a.seq, (a.batch,), generator=g)
    end = torch.clamp(start + 3, max=a.seq - 1)
    labels = None
    if a.task == "masked-lm":
        labels = torch.where(torch.randint(0, 7, ids.shape, generator=g) == 0, ids, -100)
    elif a.task == "sequence-classification":
        labels = torch.randint(0, 2, (a.batch,), generator=g)
    elif a.task == "token-classification":
        labels = torch.randint(0, 2, ids.shape, generator=g)
        labels[:, 0] = labels[:, -1] = -100
        labels[torch.randint(0, 4, ids.shape, generator=g) == 0] = -100
    if labels is not None:
        start = end = None
    if a.optimizer:
        for prec in a.precision:
            optimizer_steps(a, model, prec, ids, mask, start, end, labels)
        return
    for prec in a.precision:
        times = []
        for i in range(a.warmup + a.steps):
            t0 = time.perf_counter()
            model.zero_grad(set_to_none=True)
            forward_backward(model, prec, ids, mask, start, end, labels)
            if i >= a.warmup:
                times.append(time.perf_counter() - t0)
        print("torch %s median %.4f s (min %.4f) over %d steps, %d threads"
              % (prec, statistics.median(times), min(times), a.steps, a.threads), flush=True)


def forward_backward(model, prec, ids, mask, start, end, labels):
    """The loss and its backward, in fp32 or under CPU autocast bf16; nothing
    is copied out of the model (the step is what is timed)."""
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if prec == "bf16" else None
    with autocast or contextlib.nullcontext():
        loss, _ = model(ids, None, mask, start, end, labels)
    loss.backward()


def optimizer_steps(a, model, prec, ids, mask, start, end, labels):
    """Trainer's training_step + optimizer step, as run_qa.py's Trainer does
    it with --bf16 --use_cpu (Trainer defaults: AdamW, lr 5e-5, weight
    decay 0, linear schedule, max_grad_norm 1.0)."""
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=5e-5, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    total = a.warmup + a.steps
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, (total - s) / total))
    times = []
    for i in range(total):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        forward_backward(model, prec, ids, mask, start, end, labels)
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        if i >= a.warmup:
            times.append(time.perf_counter() - t0)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("torch %s median %.4f s (min %.4f) over %d steps, %d threads; %.3f samples/s; "
          "peak RSS %.1f MiB" % (prec, statistics.median(times), min(times), a.steps, a.threads,
                                 a.batch * len(times) / sum(times), rss), flush=True)


if __name__ == "__main__":
    main()
