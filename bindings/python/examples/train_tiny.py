"""Train a tiny BERT question-answering model on synthetic data, with the
whole loop (AdamW, schedule, accumulation, logging, evaluation,
checkpoints) running inside libcputrain and Python only watching.

    CPUTRAIN_LIBRARY=build/lib/libcputrain.so.0 PYTHONPATH=bindings/python \\
        python3 bindings/python/examples/train_tiny.py [output_dir]

The task is learnable on purpose: the answer span starts at token 7 and
ends at token 8, so the loss falls within a few dozen steps. No numpy
needed.
"""

import os
import random
import sys
import tempfile

import cputrain

SEQ_LEN = 24
START, END = 7, 8


def synthetic(n, rng):
    """(input_ids, (start, end)) pairs: random tokens, an answer from START to END."""
    examples = []
    for _ in range(n):
        ids = [rng.randrange(10, 128) for _ in range(SEQ_LEN)]
        ids[0] = 2  # a [CLS]-like first token
        start = rng.randrange(1, SEQ_LEN - 3)
        end = start + rng.randrange(0, 3)
        ids[start], ids[end] = START, END
        examples.append((ids, (start, end)))
    return examples


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="cputrain-tiny-")
    rng = random.Random(0)

    train = cputrain.Dataset("question-answering", SEQ_LEN)
    for ids, span in synthetic(512, rng):
        train.add(ids, span)
    held_out = cputrain.Dataset("question-answering", SEQ_LEN)
    for ids, span in synthetic(64, rng):
        held_out.add(ids, span)

    model = cputrain.Model.create("bert-test", task="question-answering", seed=0)
    args = cputrain.TrainingArgs(
        output_dir=out, num_train_epochs=4.0, per_device_train_batch_size=16,
        gradient_accumulation_steps=2, learning_rate=3e-3, weight_decay=0.01,
        lr_scheduler_type="cosine", warmup_ratio=0.1, logging_steps=8,
        eval_strategy="epoch", save_strategy="epoch", save_total_limit=2, seed=0)

    def progress(event, step, max_steps, epoch, log):
        if event == cputrain.Event.TRAIN_BEGIN:
            print("training %s for %d steps into %s" % (model.architecture, max_steps, out))
        elif event == cputrain.Event.LOG and "loss" in log:
            print("step %3d/%d  epoch %.2f  loss %.4f  lr %.2e  grad_norm %.3f"
                  % (step, max_steps, epoch, log["loss"], log["learning_rate"], log["grad_norm"]))
        elif event == cputrain.Event.EVALUATE:
            print("step %3d/%d  eval_loss %.4f" % (step, max_steps, log["eval_loss"]))
        elif event == cputrain.Event.SAVE:
            print("            saved %s" % os.path.basename(log["checkpoint"]))
        return False  # True would stop training

    def evaluate(trainer):
        return {"eval_loss": trainer.evaluate_loss(held_out)}

    trainer = cputrain.Trainer(model, args, train_dataset=train, progress=progress,
                               evaluate=evaluate)
    result = trainer.train()
    print("done: %d steps, mean training loss %.4f, %.1f steps/s"
          % (result.global_step, result.training_loss, result.metrics["train_steps_per_second"]))
    print("files:", ", ".join(sorted(os.listdir(out))))


if __name__ == "__main__":
    main()
