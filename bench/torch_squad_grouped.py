#!/usr/bin/python3
"""PyTorch's best setting for SQuAD fine-tuning, timed: run_qa.py with
--pad_to_max_length False --group_by_length, i.e. Trainer's
LengthGroupedSampler order (a random permutation cut into megabatches of
50 batches, each sorted longest first, the longest megabatch's head moved
to the very front) and every batch padded only to its longest window
(DataCollatorWithPadding). The windows are this library's QA features of
the same file (the same tokenizer, max_seq_length and doc_stride as
run_qa.py's prepare_train_features), so both sides see the same lengths;
the model is tests/ref/torch_bert.py's BERT, trained as
torch_bert_step.py --optimizer trains it (autocast bf16 or fp32, AdamW,
clip_grad_norm_, the linear schedule). A benchmark: it prints figures and
judges nothing.

usage: torch_squad_grouped.py DATA_DIR [--model NAME] [--seq 384] [--stride 128]
                              [--batch 12] [--steps 6] [--threads 2] [--seed 42]
                              [--precision bf16|fp32]
DATA_DIR holds train.json and vocab.txt (bench/squad_profile.py writes them).
Prints "torch-grouped <precision> ...; <samples/s> samples/s; peak RSS <MiB> MiB;
mean padded length <L>" over the steps after the first."""
import argparse
import os
import resource
import sys
import time

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "tests", "ref"))
sys.path.insert(0, os.path.join(here, "..", "bindings", "python"))
import cputrain  # noqa: E402
import torch_bert  # noqa: E402


def grouped_order(lengths, batch, seed):
    """LengthGroupedSampler.__iter__ (get_length_grouped_indices), one process."""
    g = torch.Generator()
    g.manual_seed(seed)
    indices = torch.randperm(len(lengths), generator=g).tolist()
    size = batch * 50
    megabatches = [sorted(indices[i:i + size], key=lambda k: lengths[k], reverse=True)
                   for i in range(0, len(indices), size)]
    longest = max(range(len(megabatches)), key=lambda m: lengths[megabatches[m][0]])
    megabatches[0][0], megabatches[longest][0] = megabatches[longest][0], megabatches[0][0]
    return [k for m in megabatches for k in m]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("data")
    p.add_argument("--model", default="bert-base-uncased")
    p.add_argument("--seq", type=int, default=384)
    p.add_argument("--stride", type=int, default=128)
    p.add_argument("--batch", type=int, default=12)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--precision", choices=["bf16", "fp32"], default="bf16")
    a = p.parse_args()
    with cputrain.Tokenizer(a.data) as tok, \
            cputrain.SquadExamples.load(os.path.join(a.data, "train.json")) as ex, \
            cputrain.QAFeatures.create(tok, ex, a.seq, a.stride) as feats:
        lengths = [int(x) for x in feats.dataset.lengths()]
    order = grouped_order(lengths, a.batch, a.seed)
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = torch_bert.build_model(a.model, "question-answering", seed=0)
    model.train()
    vocab = torch_bert.Config.resolve(a.model).vocab_size
    params = [q for q in model.parameters() if q.requires_grad]
    opt = torch.optim.AdamW(params, lr=5e-5, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, (a.steps - s) / a.steps))
    g = torch.Generator().manual_seed(1)
    times, padded, samples = [], [], 0
    for step in range(a.steps):
        rows = order[(step * a.batch) % len(order):][:a.batch]
        if len(rows) < a.batch:  # wrap around a short set
            rows += order[:a.batch - len(rows)]
        lens = [lengths[k] for k in rows]
        width = max(lens)
        ids = torch.randint(1, vocab, (a.batch, width), generator=g)
        mask = (torch.arange(width)[None, :] < torch.tensor(lens)[:, None]).long()
        start = torch.tensor([ln // 2 for ln in lens])
        end = torch.clamp(start + 3, max=width - 1)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        if a.precision == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss, _ = model(ids, None, mask, start, end)
        else:
            loss, _ = model(ids, None, mask, start, end)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        if step > 0:  # the first is start-up
            times.append(time.perf_counter() - t0)
            padded.append(width)
            samples += a.batch
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("torch-grouped %s %d steps, %d threads, %d features; %.3f samples/s; peak RSS "
          "%.1f MiB; mean padded length %.1f" % (a.precision, len(times), a.threads,
                                                  len(lengths), samples / sum(times), rss,
                                                  sum(padded) / len(padded)), flush=True)


if __name__ == "__main__":
    main()
