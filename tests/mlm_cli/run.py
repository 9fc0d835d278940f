"""cputrain-mlm (run_mlm.py in C) end to end on generated text whose words
follow each other by a rule: the perplexity after training must fall well
below the untrained model's; grouped blocks and --line_by_line, whole-word
masking, one rank against two (shm, masks keyed by the example so both
draw the same), and run_mlm.py's files.

usage: run.py BUILD_DIR   (prints one line per check, exits 1 on a failure)"""

import json
import math
import os
import random
import shutil
import struct
import subprocess
import sys

import numpy as np

B = sys.argv[1] if len(sys.argv) > 1 else "build"
MLM = os.path.join(B, "bin", "cputrain-mlm")
RUN = os.path.join(B, "bin", "cputrain-run")
DIR = os.path.join(B, "mlm-cli-test")
# Each subject has its own verb and object: the rest of a sentence follows
# from its first word.
RULES = {"cat": ("chases", "mice"), "dog": ("guards", "house"), "bird": ("sings", "songs"),
         "fish": ("swims", "deep"), "cow": ("eats", "grass"), "bee": ("makes", "honey")}
WORDS = ["the", "a", ".", "and", "runs", "##s"] + [w for k, v in RULES.items() for w in (k,) + v]
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("mlm_cli: ok: %s" % name)
    else:
        failed += 1
        print("mlm_cli: FAILED: %s %s" % (name, detail))


def read_json(*parts):
    with open(os.path.join(*parts)) as f:
        return json.load(f)


def weights(path):
    with open(path, "rb") as f:
        blob = f.read()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    return {k: np.frombuffer(blob[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]],
                             dtype=np.float32) for k, v in header.items() if k != "__metadata__"}


def setup():
    shutil.rmtree(DIR, ignore_errors=True)
    os.makedirs(os.path.join(DIR, "model"))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
    with open(os.path.join(DIR, "model", "vocab.txt"), "w") as f:
        f.write("\n".join(vocab) + "\n")
    with open(os.path.join(DIR, "model", "config.json"), "w") as f:
        json.dump({"model_type": "bert", "vocab_size": len(vocab), "hidden_size": 32,
                   "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
                   "max_position_embeddings": 64}, f)
    rng = random.Random(6)
    for split, n in (("train", 1200), ("valid", 100)):
        with open(os.path.join(DIR, split + ".txt"), "w") as f:
            for _ in range(n):
                subject = rng.choice(sorted(RULES))
                verb, obj = RULES[subject]
                f.write("%s %s %s %s .\n" % (rng.choice(["the", "a"]), subject, verb, obj))
                if rng.random() < 0.2:
                    f.write("\n")  # empty lines: dropped by --line_by_line


def mlm(out, *args, ranks=1):
    cmd = [MLM, "--config_name", os.path.join(DIR, "model", "config.json"), "--tokenizer_name",
           os.path.join(DIR, "model"), "--output_dir", out, "--train_file",
           os.path.join(DIR, "train.txt"), "--validation_file", os.path.join(DIR, "valid.txt"),
           "--per_device_train_batch_size", "8", "--learning_rate", "3e-3", "--seed", "3",
           "--report_to", "none", "--save_strategy", "no", "--max_seq_length", "16"] + list(args)
    if ranks > 1:
        cmd = [RUN, "--standalone", "--nproc_per_node", str(ranks)] + cmd
        cmd[cmd.index("8")] = str(8 // ranks)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
    if p.returncode != 0:
        print(p.stdout[-2000:], p.stderr[-3000:])
    return p


def heads_from_the_encoder(folder):
    """The adapted encoder under the other tools' heads: each loads it, says
    which head tensors are new, and trains. Then the folders those write
    under each other's heads and under the MLM head again."""
    csv_file = os.path.join(DIR, "cls.csv")
    with open(csv_file, "w") as f:
        f.write("sentence,label\n" + "".join("the %s %s %s .,%s\n" % (s, v, o, s == "cat")
                                             for s, (v, o) in sorted(RULES.items())) * 4)
    ner_file = os.path.join(DIR, "ner.jsonl")
    with open(ner_file, "w") as f:
        for s, (v, o) in sorted(RULES.items()):
            f.write(json.dumps({"tokens": ["the", s, v, o], "ner_tags": ["O", "B-X", "I-X", "O"]})
                    + "\n")
    common = ["--model_name_or_path", folder, "--do_train", "--max_steps", "2", "--report_to",
              "none", "--save_strategy", "no", "--max_seq_length", "16"]
    for tool, data, head in (("cputrain-glue", ["--train_file", csv_file, "--validation_file",
                                                 csv_file], "bert.pooler.dense.weight"),
                             ("cputrain-ner", ["--train_file", ner_file], "classifier.weight")):
        out = os.path.join(DIR, tool)
        p = subprocess.run([os.path.join(B, "bin", tool), "--output_dir", out] + common + data,
                           capture_output=True, text=True, timeout=600)
        check("the MLM encoder under %s's head: trains, naming the new tensors" % tool,
              p.returncode == 0 and "newly initialised (first: %s)" % head in p.stderr,
              p.stderr[-600:])
    # 2 classes against 3 tags: the classifiers differ in shape, refused
    # naming the tensor as from_pretrained refuses, or initialised anew with
    # --ignore_mismatched_sizes as run_glue / run_ner pass it
    glue_out, ner_out = os.path.join(DIR, "cputrain-glue"), os.path.join(DIR, "cputrain-ner")
    for tool, source, data in (("cputrain-ner", glue_out, ["--train_file", ner_file]),
                               ("cputrain-glue", ner_out, ["--train_file", csv_file,
                                                           "--validation_file", csv_file])):
        run = [os.path.join(B, "bin", tool), "--output_dir", os.path.join(DIR, tool + "-x")]
        args = common[2:] + ["--model_name_or_path", source] + data
        p = subprocess.run(run + args, capture_output=True, text=True, timeout=600)
        check("%s's folder under %s's head: refused naming classifier.weight" %
              (os.path.basename(source), tool),
              p.returncode != 0 and "'classifier.weight' has shape" in p.stderr and
              "ignore_mismatched_sizes" in p.stderr, p.stderr[-600:])
        p = subprocess.run(run + args + ["--ignore_mismatched_sizes"], capture_output=True,
                           text=True, timeout=600)
        check("... with --ignore_mismatched_sizes: trains, the classifier newly initialised",
              p.returncode == 0 and "'classifier.weight' is newly initialised" in p.stderr,
              p.stderr[-600:])
    for source in (glue_out, ner_out):
        p = mlm(os.path.join(DIR, "mlm-from-" + os.path.basename(source)), "--do_train",
                "--max_steps", "2", "--model_name_or_path", source)
        check("%s's folder under the MLM head: trains, naming the new tensors" %
              os.path.basename(source),
              p.returncode == 0 and "newly initialised (first: cls.predictions" in p.stderr,
              p.stderr[-600:])


def main():
    setup()
    p = mlm(os.path.join(DIR, "before"), "--do_eval")
    check("evaluation of the untrained model: exit 0", p.returncode == 0)
    untrained = read_json(DIR, "before", "eval_results.json") if p.returncode == 0 else {}
    before = untrained.get("perplexity", float("inf"))
    for name, extra in (("blocks", ["--bf16"]), ("lines", ["--line_by_line"]),
                        ("words", ["--whole_word_mask"])):
        out = os.path.join(DIR, name)
        p = mlm(out, "--do_train", "--do_eval", "--num_train_epochs", "8", *extra)
        check("%s: exit 0" % name, p.returncode == 0)
        if p.returncode:
            continue
        res = read_json(out, "eval_results.json")
        check("%s: run_mlm.py's keys" % name, {"eval_loss", "eval_accuracy", "perplexity",
                                               "eval_samples", "epoch"} <= set(res), sorted(res))
        check("%s: eval_accuracy %.3f of the masked tokens, above the untrained %.3f"
              % (name, res.get("eval_accuracy", 0), untrained.get("eval_accuracy", 1)),
              0 <= untrained.get("eval_accuracy", 1) < res.get("eval_accuracy", 0) <= 1)
        check("%s: perplexity = exp(eval_loss)" % name,
              abs(res["perplexity"] - math.exp(res["eval_loss"])) < 1e-9 * res["perplexity"])
        # blocks cut sentences, so some masked words have no subject to follow
        check("%s: perplexity %.2f well below the untrained %.2f" % (name, res["perplexity"],
                                                                     before),
              res["perplexity"] < before / 2.5)
    config = read_json(DIR, "blocks", "config.json")
    check("config.json names BertForMaskedLM", config.get("architectures") == ["BertForMaskedLM"])
    heads_from_the_encoder(os.path.join(DIR, "blocks"))
    one = mlm(os.path.join(DIR, "r1"), "--do_train", "--max_steps", "20")
    two = mlm(os.path.join(DIR, "r2"), "--do_train", "--max_steps", "20", ranks=2)
    if one.returncode == 0 and two.returncode == 0:
        a = weights(os.path.join(DIR, "r1", "model.safetensors"))
        b = weights(os.path.join(DIR, "r2", "model.safetensors"))
        diff = max(float(np.max(np.abs(a[k] - b[k]))) for k in a)
        check("2 ranks x batch 4 = 1 rank x batch 8 with masking on: weights within 2e-5 "
              "after 20 steps (%.1e)" % diff, diff < 2e-5)
    else:
        check("1 and 2 ranks run", False)
    # make check runs offline: a dataset not cached fails saying where it looked
    p = subprocess.run([MLM, "--config_name", os.path.join(DIR, "model", "config.json"),
                        "--tokenizer_name", os.path.join(DIR, "model"), "--output_dir",
                        os.path.join(DIR, "refused"), "--dataset_name", "wikitext",
                        "--dataset_config_name", "wikitext-2-raw-v1", "--do_train"],
                       capture_output=True, text=True, timeout=300)
    check("--dataset_name wikitext offline and not cached: fails naming the Hub cache",
          p.returncode == 1 and "not in the Hub cache" in p.stderr, p.stderr[-400:])
    print("mlm_cli: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
