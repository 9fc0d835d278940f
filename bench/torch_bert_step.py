#!/usr/bin/python3
"""Times training steps (forward + backward) of the PyTorch reference BERT in
tests/ref/torch_bert.py — the same architecture and head as the library —
in fp32 and under CPU autocast bf16 (what Trainer does with --bf16 --use_cpu),
and prints one line per precision: "torch <precision> median <seconds>".
A benchmark: it prints figures and judges nothing.

usage: torch_bert_step.py [--model NAME] [--batch B] [--seq T] [--steps N]
                          [--warmup W] [--threads N] [--precision fp32|bf16 ...]"""
import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ref"))
import torch_bert  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="bert-base-uncased")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--precision", nargs="+", default=["bf16", "fp32"])
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    model = torch_bert.build_model(a.model, "question-answering", seed=0)
    model.train()
    g = torch.Generator().manual_seed(1)
    vocab = torch_bert.Config.resolve(a.model).vocab_size
    ids = torch.randint(1, vocab, (a.batch, a.seq), generator=g)
    mask = torch.ones_like(ids)
    start = torch.randint(0, a.seq, (a.batch,), generator=g)
    end = torch.clamp(start + 3, max=a.seq - 1)
    for prec in a.precision:
        mode = {"bf16": "bf16-autocast", "fp32": "fp32"}[prec]
        times = []
        for i in range(a.warmup + a.steps):
            t0 = time.perf_counter()
            torch_bert.run_batch(model, ids, attention_mask=mask, start_positions=start,
                                 end_positions=end, precision=mode, backward=True)
            if i >= a.warmup:
                times.append(time.perf_counter() - t0)
        print("torch %s median %.4f s (min %.4f) over %d steps, %d threads"
              % (prec, statistics.median(times), min(times), a.steps, a.threads), flush=True)


if __name__ == "__main__":
    main()
