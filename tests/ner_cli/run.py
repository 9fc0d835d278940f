"""cputrain-ner (run_ner.py in C) end to end on IOB2 data generated here
with a rule a small model learns (an entity's words come from its type's
vocabulary): string tags from JSON lines, conll2003's integer tags through
--dataset_name, label_all_tokens, entity-level metrics, one rank against
two (shm) with dropout on, in fp32 and bf16; 50001 distinct tags. Checks run_ner.py's files and
keys, and the reported scores against tests/python/seqeval_ref.py on the written predictions.

usage: run.py BUILD_DIR   (prints one line per check, exits 1 on a failure)"""

import json
import os
import random
import shutil
import struct
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import seqeval_ref  # noqa: E402

B = sys.argv[1] if len(sys.argv) > 1 else "build"
NER = os.path.join(B, "bin", "cputrain-ner")
RUN = os.path.join(B, "bin", "cputrain-run")
DIR = os.path.join(B, "ner-cli-test")
PEOPLE = ["ana", "bo", "cy", "dee"]
PLACES = ["paris", "rome", "oslo", "lima"]
OTHER = ["went", "to", "met", "in", "the", "and", "saw", "city", "##s", "a"]
CONLL = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ner_cli: ok: %s" % name)
    else:
        failed += 1
        print("ner_cli: FAILED: %s %s" % (name, detail))


def read_json(*parts):
    with open(os.path.join(*parts)) as f:
        return json.load(f)


def max_difference(a, b):
    """Largest |a - b| over the F32 tensors of two model.safetensors."""
    def read(path):
        with open(path, "rb") as f:
            blob = f.read()
        n = struct.unpack("<Q", blob[:8])[0]
        header = json.loads(blob[8:8 + n])
        return {k: np.frombuffer(blob[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]],
                                 dtype=np.float32)
                for k, v in header.items() if k != "__metadata__"}
    x, y = read(a), read(b)
    return max(float(np.max(np.abs(x[k] - y[k]))) for k in x)


def sentence(rng):
    """Entities never touch (an O word after each), so B-/I- follow from
    the words alone."""
    words, tags = [], []
    while len(words) < rng.randrange(4, 9):
        r = rng.random()
        if tags and tags[-1] != "O":
            r = 1.0
        if r < 0.25:
            n = rng.randrange(1, 3)
            for i in range(n):
                words.append(rng.choice(PEOPLE))
                tags.append("B-PER" if i == 0 else "I-PER")
        elif r < 0.4:
            words.append(rng.choice(PLACES))
            tags.append("B-LOC")
        else:
            words.append(rng.choice([w for w in OTHER if not w.startswith("#")]))
            tags.append("O")
    return words, tags


def setup():
    shutil.rmtree(DIR, ignore_errors=True)
    os.makedirs(os.path.join(DIR, "model"))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + PEOPLE + PLACES + OTHER
    with open(os.path.join(DIR, "model", "vocab.txt"), "w") as f:
        f.write("\n".join(vocab) + "\n")
    with open(os.path.join(DIR, "model", "config.json"), "w") as f:
        json.dump({"model_type": "bert", "vocab_size": len(vocab), "hidden_size": 32,
                   "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
                   "max_position_embeddings": 64}, f)
    rng = random.Random(5)
    data = {}
    for split, n in (("train", 200), ("validation", 40), ("test", 40)):
        data[split] = [sentence(rng) for _ in range(n)]
        with open(os.path.join(DIR, split + ".jsonl"), "w") as f:
            for i, (w, t) in enumerate(data[split]):
                f.write(json.dumps({"id": str(i), "tokens": w, "ner_tags": t}) + "\n")
    # conll2003 as datasets' to_json writes it: integer tags of its ClassLabel
    os.makedirs(os.path.join(DIR, "hub", "conll2003"))
    for split in ("train", "validation"):
        with open(os.path.join(DIR, "hub", "conll2003", split + ".jsonl"), "w") as f:
            for i, (w, t) in enumerate(data[split]):
                f.write(json.dumps({"id": str(i), "tokens": w, "pos_tags": [0] * len(w),
                                    "ner_tags": [CONLL.index(x) for x in t]}) + "\n")
    return data


def ner(out, *args, ranks=1):
    cmd = [NER, "--config_name", os.path.join(DIR, "model", "config.json"), "--tokenizer_name",
           os.path.join(DIR, "model"), "--output_dir", out, "--per_device_train_batch_size", "8",
           "--learning_rate", "3e-3", "--num_train_epochs", "15", "--seed", "3",
           "--report_to", "none", "--save_strategy", "no", "--max_seq_length", "32"] + list(args)
    if ranks > 1:
        cmd = [RUN, "--standalone", "--nproc_per_node", str(ranks)] + cmd
        cmd[cmd.index("8")] = str(8 // ranks)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
    if p.returncode != 0:
        print(p.stdout[-2000:], p.stderr[-3000:])
    return p


def many_tags():
    """50000 distinct tags (B- and I- of 25000 types): label_list is their
    sorted set, each B- tag paired with its I- tag for --label_all_tokens,
    and a validation tag outside them refused, naming the count. (Sorted
    and bisected: what this checks is what is read, not the time.)"""
    n = 25000
    rng = random.Random(7)
    tags = ["%s-T%05d" % (p, k) for k in range(n) for p in "BI"]
    rng.shuffle(tags)
    train, dev = os.path.join(DIR, "many_train.jsonl"), os.path.join(DIR, "many_dev.jsonl")
    with open(train, "w") as f:
        f.write("".join(json.dumps({"tokens": ["ana", "paris"], "ner_tags": [t, "O"]}) + "\n"
                        for t in tags))
    with open(dev, "w") as f:
        for t in ("B-T00000", "I-T24999", "B-T25000"):
            f.write(json.dumps({"tokens": ["ana", "paris"], "ner_tags": [t, "O"]}) + "\n")
    p = ner(os.path.join(DIR, "many"), "--train_file", train, "--validation_file", dev,
            "--do_train", "--do_eval", "--label_all_tokens", "--max_steps", "1")
    check("50001 tags: read, and a validation tag outside them refused",
          p.returncode == 1 and
          'row 2: tag "B-T25000" is not one of the 50001 the training data has' in p.stderr,
          p.stderr[-500:])


def main():
    data = setup()
    many_tags()
    files = ["--train_file", os.path.join(DIR, "train.jsonl"), "--validation_file",
             os.path.join(DIR, "validation.jsonl"), "--test_file", os.path.join(DIR, "test.jsonl")]
    out = os.path.join(DIR, "tags")
    p = ner(out, *files, "--do_train", "--do_eval", "--do_predict",
            "--return_entity_level_metrics", "--bf16")
    check("string tags from JSON lines: exit 0", p.returncode == 0)
    if p.returncode == 0:
        res = read_json(out, "eval_results.json")
        check("eval_results.json has run_ner.py's keys (return_entity_level_metrics: "
              "seqeval's overall_* beside each type's)",
              {"eval_overall_precision", "eval_overall_recall", "eval_overall_f1",
               "eval_overall_accuracy", "eval_loss", "eval_samples", "epoch", "eval_PER_f1",
               "eval_LOC_number"} <= set(res) and "eval_f1" not in res, sorted(res))
        check("the rule is learnt: entity F1 >= 0.9", res["eval_overall_f1"] >= 0.9, res)
        with open(os.path.join(out, "predictions.txt")) as f:
            pred = [line.split() for line in f.read().splitlines()]
        refs = [t for _, t in data["test"]]
        check("predictions.txt: a tag per word, a sentence per line",
              [len(x) for x in pred] == [len(x) for x in refs])
        want = seqeval_ref.scores(refs, pred)
        got = read_json(out, "predict_results.json")
        check("predict_f1 / precision / recall / accuracy are seqeval's of the predictions",
              all(abs(got["predict_overall_" + k] - want["overall_" + k]) < 1e-12
                  for k in ("f1", "precision", "recall", "accuracy")), (got, want))
        check("predict_PER_f1 is seqeval's", abs(got["predict_PER_f1"] - want["PER"]["f1"])
              < 1e-12)
        config = read_json(out, "config.json")
        check("config.json: sorted tag names and the token-classification head",
              config.get("id2label") == {"0": "B-LOC", "1": "B-PER", "2": "I-PER", "3": "O"} and
              config["architectures"] == ["BertForTokenClassification"], config)
    # Dropout on. The loss is a mean over labelled tokens: each step's over every rank's
    # (eval_loss is not compared: Trainer averages it per evaluation batch).
    one = ner(os.path.join(DIR, "r1"), *files[:2], "--do_train", "--num_train_epochs", "1")
    two = ner(os.path.join(DIR, "r2"), *files[:2], "--do_train", "--num_train_epochs", "1",
              ranks=2)
    if one.returncode == 0 and two.returncode == 0:
        diff = max_difference(os.path.join(DIR, "r1", "model.safetensors"),
                              os.path.join(DIR, "r2", "model.safetensors"))
        check("2 ranks x batch 4 = 1 rank x batch 8: the same weights within 2e-5 after 25 "
              "steps (%.1e)" % diff, diff < 2e-5)
    else:
        check("1 and 2 ranks run", False)
    # bf16 rounds the weights to 8 bits of mantissa, where a reduction-order
    # difference flips a rounding now and then and grows over the steps: the
    # same entity metrics within a token or two (the weights' difference is
    # printed, not held). Measured at the avx2 level with the paired dropout
    # draws: F1 equal, accuracy one token of 233 apart (equal with the masks
    # before them).
    one = ner(os.path.join(DIR, "b1"), *files[:4], "--do_train", "--do_eval", "--bf16")
    two = ner(os.path.join(DIR, "b2"), *files[:4], "--do_train", "--do_eval", "--bf16", ranks=2)
    if one.returncode == 0 and two.returncode == 0:
        a, b = read_json(DIR, "b1", "eval_results.json"), read_json(DIR, "b2", "eval_results.json")
        diff = max_difference(os.path.join(DIR, "b1", "model.safetensors"),
                              os.path.join(DIR, "b2", "model.safetensors"))
        check("--bf16 2 ranks x batch 4 = 1 rank x batch 8: eval F1 within 0.02 and accuracy "
              "within 0.01 (weights %.1e apart)" % diff,
              abs(a["eval_f1"] - b["eval_f1"]) <= 0.02 and
              abs(a["eval_accuracy"] - b["eval_accuracy"]) <= 0.01, (a, b))
    else:
        check("1 and 2 ranks run in bf16", False)
    out = os.path.join(DIR, "conll")
    p = ner(out, "--dataset_name", "conll2003", "--dataset_dir", os.path.join(DIR, "hub"),
            "--do_train", "--do_eval", "--label_all_tokens")
    check("--dataset_name conll2003 (integer tags): exit 0", p.returncode == 0)
    if p.returncode == 0:
        config = read_json(out, "config.json")
        check("conll2003's names in config.json", [config["id2label"][str(i)] for i in range(9)]
              == CONLL, config.get("id2label"))
        check("conll2003: entity F1 >= 0.9", read_json(out, "eval_results.json")["eval_f1"]
              >= 0.9)
    for args, needle in ((["--train_file", os.path.join(DIR, "train.jsonl"), "--do_train",
                           "--doc_stride", "3"], "unknown argument --doc_stride"),
                         (["--do_train"], "need either a dataset name")):
        p = ner(os.path.join(DIR, "refused"), *args)
        check("refused: %s" % " ".join(args[-2:]), p.returncode == 2 and needle in p.stderr,
              p.stderr[-400:])
    # make check runs offline: a dataset not cached is refused saying where it looked
    p = ner(os.path.join(DIR, "refused"), "--dataset_name", "wnut_17", "--do_train")
    check("--dataset_name wnut_17 offline and not cached: fails naming the Hub cache",
          p.returncode == 1 and "wnut_17" in p.stderr and "not in the Hub cache" in p.stderr,
          p.stderr[-400:])
    print("ner_cli: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
