"""cputrain-glue (run_glue.py in C) end to end on data generated here, each
set with a rule a small model learns: single sentences in CSV with string
labels, MRPC-style pairs by --task_name from JSON lines, STS-B-style
regression, multi-label lists; one rank against two (shm), dropout on, in fp32
and bf16. Checks
run_glue.py's files and keys, the labels saved in config.json, and every
reported metric against scikit-learn / SciPy recomputed from the written
predictions; labels as the datasets library reads them, and 50000 of them.

usage: run.py BUILD_DIR   (prints one line per check, exits 1 on a failure)"""

import csv
import itertools
import json
import os
import random
import shutil
import subprocess
import sys

import numpy as np
from scipy import stats
from sklearn import metrics

B = sys.argv[1] if len(sys.argv) > 1 else "build"
GLUE = os.path.join(B, "bin", "cputrain-glue")
RUN = os.path.join(B, "bin", "cputrain-run")
DIR = os.path.join(B, "glue-cli-test")
WORDS = ["good", "great", "fine", "bad", "awful", "poor", "the", "movie", "plot", "was", "a",
         "is", "film", "story", "very", "quite", "red", "blue", "green", "cat", "dog"]
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("glue_cli: ok: %s" % name)
    else:
        failed += 1
        print("glue_cli: FAILED: %s %s" % (name, detail))


def read_json(*parts):
    with open(os.path.join(*parts)) as f:
        return json.load(f)


def setup():
    shutil.rmtree(DIR, ignore_errors=True)
    os.makedirs(os.path.join(DIR, "model"))
    with open(os.path.join(DIR, "model", "vocab.txt"), "w") as f:
        f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS) + "\n")
    with open(os.path.join(DIR, "model", "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": True, "model_max_length": 64}, f)
    with open(os.path.join(DIR, "model", "config.json"), "w") as f:
        json.dump({"model_type": "bert", "vocab_size": 5 + len(WORDS), "hidden_size": 32,
                   "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
                   "max_position_embeddings": 64, "type_vocab_size": 2}, f)
    with open(os.path.join(DIR, "model", "distilbert.json"), "w") as f:
        json.dump({"model_type": "distilbert", "vocab_size": 5 + len(WORDS), "dim": 32,
                   "n_layers": 2, "n_heads": 2, "hidden_dim": 64,
                   "max_position_embeddings": 64}, f)


def sentence(rng, mood=None):
    words = [rng.choice(WORDS[6:]) for _ in range(rng.randrange(3, 7))]
    if mood is not None:
        words.insert(rng.randrange(len(words)), rng.choice(WORDS[0:3] if mood else WORDS[3:6]))
    return " ".join(words)


def glue(out, *args, ranks=1, config="config.json"):
    # a fresh model of the config (the weights are learnt here)
    cmd = [GLUE, "--config_name", os.path.join(DIR, "model", config), "--tokenizer_name",
           os.path.join(DIR, "model"), "--output_dir", out,
           "--per_device_train_batch_size", "8", "--learning_rate", "3e-3", "--seed", "3",
           "--report_to", "none", "--save_strategy", "no"] + list(args)
    if ranks > 1:
        cmd = [RUN, "--standalone", "--nproc_per_node", str(ranks)] + cmd
        cmd[cmd.index("8")] = str(8 // ranks)  # the same global batch
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
    if p.returncode != 0:
        print(p.stdout[-2000:], p.stderr[-3000:])
    return p


def predictions(out, task):
    with open(os.path.join(out, "predict_results_%s.txt" % task)) as f:
        rows = list(csv.reader(f, delimiter="\t"))
    return rows[0], [r[1] for r in rows[1:]]


def single_sentences_in_csv():
    rng = random.Random(1)
    files = {}
    for split, n in (("train", 160), ("validation", 40)):
        files[split] = os.path.join(DIR, "sst_%s.csv" % split)
        with open(files[split], "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["sentence", "label"])
            for _ in range(n):
                mood = rng.random() < 0.5
                w.writerow([sentence(rng, mood), "pos" if mood else "neg"])
    out = os.path.join(DIR, "sst")
    p = glue(out, "--train_file", files["train"], "--validation_file", files["validation"],
             "--test_file", files["validation"], "--do_train", "--do_eval", "--do_predict",
             "--num_train_epochs", "4", "--bf16")
    check("CSV single sentences: exit 0", p.returncode == 0)
    if p.returncode:
        return
    res = read_json(out, "eval_results.json")
    check("eval_results.json has run_glue.py's keys",
          {"eval_accuracy", "eval_loss", "eval_samples", "epoch", "eval_runtime",
           "eval_samples_per_second", "eval_steps_per_second"} <= set(res), sorted(res))
    check("the rule is learnt: eval_accuracy >= 0.9", res["eval_accuracy"] >= 0.9, res)
    head, pred = predictions(out, "None")
    with open(files["validation"]) as f:
        want = [row["label"] for row in csv.DictReader(f)]
    check("predict_results_None.txt: index / label name", head == ["index", "prediction"] and
          set(pred) <= {"neg", "pos"}, head)
    check("eval_accuracy is sklearn's accuracy of the predictions",
          abs(metrics.accuracy_score(want, pred) - res["eval_accuracy"]) < 1e-12)
    config = read_json(out, "config.json")
    check("config.json: labels and architecture",
          config["id2label"] == {"0": "neg", "1": "pos"} and
          config["label2id"] == {"neg": 0, "pos": 1} and
          config["architectures"] == ["BertForSequenceClassification"], config)
    allres = read_json(out, "all_results.json")
    check("all_results.json merges train and eval", "train_loss" in allres and
          "eval_accuracy" in allres, sorted(allres))
    for name in ("vocab.txt", "tokenizer.json", "README.md", "trainer_state.json"):
        check("output_dir has %s" % name, os.path.exists(os.path.join(out, name)))
    return res


def pairs_by_task_name(ranks=1, *extra):
    """MRPC-like: equivalent when the second sentence says "great"."""
    rng = random.Random(2)
    data = os.path.join(DIR, "glue", "mrpc")
    os.makedirs(data, exist_ok=True)
    for split, n in (("train", 160), ("validation", 40), ("test", 20)):
        with open(os.path.join(data, split + ".jsonl"), "w") as f:
            for i in range(n):
                a = sentence(rng)
                same = rng.random() < 0.5
                b = sentence(rng) + (" great" if same else "")
                label = -1 if split == "test" else int(same)
                f.write(json.dumps({"sentence1": a, "sentence2": b, "label": label, "idx": i})
                        + "\n")
    out = os.path.join(DIR, "mrpc%d%s" % (ranks, "".join(extra)))
    p = glue(out, "--task_name", "mrpc", "--dataset_dir", os.path.join(DIR, "glue"),
             "--do_train", "--do_eval", "--do_predict", "--num_train_epochs", "6",
             "--max_seq_length", "32", *extra, ranks=ranks)
    check("--task_name mrpc on %d rank(s): exit 0" % ranks, p.returncode == 0)
    if p.returncode:
        return None
    res = read_json(out, "eval_results.json")
    check("mrpc: the rule is learnt, eval_accuracy >= 0.9", res["eval_accuracy"] >= 0.9, res)
    check("mrpc reports accuracy, f1 and their mean as combined_score",
          abs(res["eval_combined_score"] - (res["eval_accuracy"] + res["eval_f1"]) / 2) < 1e-12,
          res)
    head, pred = predictions(out, "mrpc")
    check("predict_results_mrpc.txt names GLUE's labels",
          set(pred) <= {"equivalent", "not_equivalent"} and len(pred) == 20)
    config = read_json(out, "config.json")
    check("config.json: MRPC's label names", config.get("id2label") ==
          {"0": "not_equivalent", "1": "equivalent"}, config.get("id2label"))
    return res


def spearman_range(got, want):
    """SciPy's Spearman correlation over every order the predictions had before rounding
    made some of them equal: its least and greatest (ties broken against and along the
    labels), and with the rounded ties kept as ties. Predictions can also be exactly
    equal before rounding (a saturated pooler gives like inputs the same output); SciPy
    and the library give those their mean rank, which narrows the spread of the ranks
    toward what keeping every rounded tie does."""
    values = [stats.spearmanr(got, want)[0]]
    for sign in (-1, 1):
        order = sorted(range(len(got)), key=lambda i: (got[i], sign * want[i]))
        ranks = [0] * len(got)
        for r, i in enumerate(order):
            ranks[i] = r
        values.append(stats.spearmanr(ranks, want)[0])
    return min(values), max(values)


def regression():
    """STS-B-like: the score is 5 when the second sentence says "great", else 0 to 1."""
    rng = random.Random(3)
    data = os.path.join(DIR, "glue", "stsb")
    os.makedirs(data, exist_ok=True)
    for split, n in (("train", 160), ("validation", 40)):
        with open(os.path.join(data, split + ".jsonl"), "w") as f:
            for _ in range(n):
                same = rng.random() < 0.5
                f.write(json.dumps({"sentence1": sentence(rng),
                                    "sentence2": sentence(rng) + (" great" if same else ""),
                                    "label": 5.0 if same else round(rng.random(), 2)}) + "\n")
    out = os.path.join(DIR, "stsb")
    p = glue(out, "--task_name", "stsb", "--dataset_dir", os.path.join(DIR, "glue"),
             "--do_train", "--do_eval", "--do_predict", "--test_file",
             os.path.join(data, "validation.jsonl"), "--num_train_epochs", "6")
    check("--task_name stsb (regression): exit 0", p.returncode == 0)
    if p.returncode:
        return
    res = read_json(out, "eval_results.json")
    check("stsb: Pearson learnt above 0.8", res["eval_pearson"] > 0.8, res)
    head, pred = predictions(out, "stsb")
    with open(os.path.join(data, "validation.jsonl")) as f:
        want = [json.loads(line)["label"] for line in f]
    got = [float(x) for x in pred]
    check("predictions written to 3 decimals", all(len(x.split(".")[1]) == 3 for x in pred))
    low, high = spearman_range(got, want)
    check("eval_pearson / eval_spearmanr are SciPy's of the predictions (to the 3 decimals)",
          abs(stats.pearsonr(got, want)[0] - res["eval_pearson"]) < 2e-3 and
          low - 1e-9 <= res["eval_spearmanr"] <= high + 1e-9, (res, low, high))
    check("config.json: one label", read_json(out, "config.json").get("id2label", {"0": 1})
          .__len__() == 1)


def multi_label():
    rng = random.Random(4)
    files = {}
    for split, n in (("train", 400), ("validation", 40)):
        files[split] = os.path.join(DIR, "tags_%s.jsonl" % split)
        with open(files[split], "w") as f:
            for _ in range(n):
                text = sentence(rng)
                tags = sorted({c for c in ("cat", "dog", "red") if c in text.split()})
                f.write(json.dumps({"text": text, "label": tags}) + "\n")
    out = os.path.join(DIR, "tags")
    p = glue(out, "--train_file", files["train"], "--validation_file", files["validation"],
             "--test_file", files["validation"], "--do_train", "--do_eval", "--do_predict",
             "--num_train_epochs", "12")
    check("multi-label lists: exit 0", p.returncode == 0)
    if p.returncode:
        return
    res = read_json(out, "eval_results.json")
    config = read_json(out, "config.json")
    check("multi-label: problem_type and labels in config.json",
          config.get("problem_type") == "multi_label_classification" and
          config.get("id2label") == {"0": "cat", "1": "dog", "2": "red"}, config)
    check("multi-label: micro F1 learnt above 0.8", res["eval_f1"] > 0.8, res)
    head, pred = predictions(out, "None")
    with open(files["validation"]) as f:
        want = [json.loads(line)["label"] for line in f]
    names = ["cat", "dog", "red"]
    hot = lambda rows: np.array([[n in r for n in names] for r in rows], dtype=int)
    got = [json.loads(x.replace("'", '"')) for x in pred]
    check("eval_f1 is sklearn's micro F1 of the predicted lists",
          abs(metrics.f1_score(hot(want), hot(got), average="micro") - res["eval_f1"]) < 1e-12,
          res)


def mnli_with_distilbert():
    """MNLI's three labels and its two validation sets, on a DistilBERT:
    entailment when the hypothesis holds a good word, contradiction a bad
    one, neutral neither."""
    rng = random.Random(5)
    data = os.path.join(DIR, "glue", "mnli")
    os.makedirs(data, exist_ok=True)
    for split, n in (("train", 300), ("validation_matched", 45),
                     ("validation_mismatched", 45)):
        with open(os.path.join(data, split + ".jsonl"), "w") as f:
            for i in range(n):
                label = rng.randrange(3)
                f.write(json.dumps({"premise": sentence(rng),
                                    "hypothesis": sentence(rng, (True, None, False)[label]),
                                    "label": label, "idx": i}) + "\n")
    out = os.path.join(DIR, "mnli")
    p = glue(out, "--task_name", "mnli", "--dataset_dir", os.path.join(DIR, "glue"),
             "--do_train", "--do_eval", "--num_train_epochs", "8", "--max_seq_length", "32",
             "--learning_rate", "1e-3",  # at 3e-3 the tiny model never finds contradiction
             config="distilbert.json")
    check("--task_name mnli on DistilBERT: exit 0", p.returncode == 0)
    if p.returncode:
        return
    res = read_json(out, "eval_results.json")
    check("mnli: matched and mismatched accuracy (eval_accuracy, eval_accuracy_mm) >= 0.8",
          res.get("eval_accuracy", 0) >= 0.8 and res.get("eval_accuracy_mm", 0) >= 0.8, res)
    config = read_json(out, "config.json")
    check("mnli: DistilBertForSequenceClassification with MNLI's three label names",
          config.get("architectures") == ["DistilBertForSequenceClassification"] and
          config.get("id2label") == {"0": "entailment", "1": "neutral", "2": "contradiction"},
          config)


def two_ranks_regression_and_multi_label():
    """Regression and multi-label heads on 2 ranks train as on 1, dropout
    on: in fp32 up to reduction order; in bf16, where rounding the weights
    can flip a bit, within the tolerance MRPC's check allows."""
    runs = (("stsb", ["--task_name", "stsb", "--dataset_dir", os.path.join(DIR, "glue")]),
            ("tags", ["--train_file", os.path.join(DIR, "tags_train.jsonl"),
                      "--validation_file", os.path.join(DIR, "tags_validation.jsonl")]))
    for (name, args), extra in itertools.product(runs, ((), ("--bf16",))):
        res = []
        for ranks in (1, 2):
            out = os.path.join(DIR, "%s-ranks%d%s" % (name, ranks, "".join(extra)))
            p = glue(out, *args, "--do_train", "--do_eval", "--max_steps", "12", *extra,
                     ranks=ranks)
            res.append(read_json(out, "eval_results.json") if p.returncode == 0 else None)
        one, two = res
        tol = 5e-3 if extra else 1e-6
        check("%s%s: 2 ranks x batch 4 = 1 rank x batch 8 (eval_loss within %g relative)"
              % (name, " " + extra[0] if extra else "", tol),
              one is not None and two is not None and
              abs(one["eval_loss"] - two["eval_loss"]) <= tol * abs(one["eval_loss"]),
              (one, two))


def refusals():
    out = os.path.join(DIR, "refused")
    for args, needle in (
            (["--task_name", "imdb"], "not a GLUE task"),
            (["--train_file", "x.csv"], "need either a GLUE task"),
            (["--task_name", "sst2", "--doc_stride", "3"], "unknown argument --doc_stride"),
            (["--task_name", "sst2", "--dataset_dir", DIR, "--do_train"], "train.json"),
            (["--dataset_name", "glue", "--task_name", "mrpc"], "give one")):
        p = glue(out, *args)
        check("refused: %s" % " ".join(args), p.returncode == 2 and needle in p.stderr,
              p.stderr[-500:])
    p = subprocess.run([GLUE, "--help"], capture_output=True, text=True)
    check("--help lists run_glue.py's arguments and the no-effect ones",
          "--task_name" in p.stdout and "--pad_to_max_length" in p.stdout and
          "No effect: there is one WordPiece tokenizer" in p.stdout)


def hostile_labels():
    """Labels of the wrong shape end in an error naming the row, never a
    crash: a list among single labels, a list inside a list; a null inside
    a list of labels is passed over as the label list passes over it."""
    def write(name, rows):
        path = os.path.join(DIR, name)
        with open(path, "w") as f:
            for text, label in rows:
                f.write(json.dumps({"text": text, "label": label}) + "\n")
        return path
    single = write("single.jsonl", [("a good day", "pos"), ("a bad day", "neg")] * 4)
    listed = write("listed.jsonl", [("a good day", ["pos"])] * 2)
    nested = write("nested.jsonl", [("a good day", [["pos"]]), ("a bad day", ["neg"])] * 4)
    nulls = write("nulls.jsonl", [("a good day", ["pos", None]), ("a bad day", ["neg"])] * 4)
    out = os.path.join(DIR, "hostile")
    for name, args, code, needle in (
            ("a list among single labels", ["--train_file", single, "--validation_file", listed,
                                            "--do_train", "--do_eval"], 1, "(a list)"),
            ("a list inside a list", ["--train_file", nested, "--validation_file", single,
                                      "--do_train"], 1, "a list must hold scalars"),
            ("a null inside a list", ["--train_file", nulls, "--validation_file", nulls,
                                      "--do_train", "--do_eval"], 0, "")):
        p = glue(out, *args, "--max_steps", "1", "--overwrite_output_dir")
        check("labels: %s: exit %d" % (name, code),
              p.returncode == code and needle in p.stderr, p.stderr[-500:])


def labels_as_datasets_reads_them():
    """A label is the value the datasets library reads (pandas for CSV): a
    column of integers is int64, so "1", "01", " 1" and "+1" are one label,
    named 1; True, true and TRUE are one boolean (named true, as JSON and
    config.json's label2id spell it). A label that is not UTF-8 is refused
    as the file is read, naming its row and column."""
    import pandas

    def write(name, labels, raw=b""):
        path = os.path.join(DIR, name)
        with open(path, "wb") as f:
            f.write(b"sentence,label\n")
            for i, label in enumerate(labels):
                f.write(("%s,%s\n" % (WORDS[i % 6], label)).encode())
            f.write(raw)
        return path
    ints = write("int_labels.csv", ["1", "01", " 1", "+1", "2", "02"] * 4)
    want = [str(v) for v in sorted(pandas.read_csv(ints)["label"].unique())]
    bools = write("bool_labels.csv", ["True", "true", "TRUE", "False", "false"] * 4)
    for name, path, id2label in (("integers", ints, dict(enumerate(want))),
                                 ("booleans", bools, {0: "false", 1: "true"})):
        out = os.path.join(DIR, "labels-" + name)
        p = glue(out, "--train_file", path, "--validation_file", path, "--do_train",
                 "--do_eval", "--max_steps", "1", "--overwrite_output_dir")
        config = read_json(out, "config.json") if p.returncode == 0 else {}
        check("CSV %s: one label per value, as pandas reads them (%s)" % (name, id2label),
              config.get("id2label") == {str(k): v for k, v in id2label.items()} and
              len(id2label) == 2, config.get("id2label"))
    bad = write("utf8_labels.csv", ["pos", "neg"], b"good,n\xffeg\n")
    p = glue(os.path.join(DIR, "labels-utf8"), "--train_file", bad, "--validation_file", bad,
             "--do_train", "--max_steps", "1", "--overwrite_output_dir")
    check("a CSV label that is not UTF-8: refused at reading, naming the row and column",
          p.returncode == 1 and bad + ': line 4: row 2, column "label": the value is not UTF-8'
          in p.stderr, p.stderr[-500:])


def many_labels():
    """50000 distinct labels: label_list is their sorted set, and a
    validation label outside it is refused, naming the count. (The list is
    built by sorting and looked up by bisection: what this checks is what
    is read, not the time.)"""
    n = 50000
    rng = random.Random(6)
    names = ["L%05d" % k for k in range(n)]
    rng.shuffle(names)
    train, dev = os.path.join(DIR, "many_train.csv"), os.path.join(DIR, "many_dev.csv")
    with open(train, "w") as f:
        f.write("sentence,label\n" + "".join("good movie,%s\n" % x for x in names))
    with open(dev, "w") as f:
        f.write("sentence,label\ngood movie,L00000\nbad plot,L49999\nthe movie,L50000\n")
    p = glue(os.path.join(DIR, "many"), "--train_file", train, "--validation_file", dev,
             "--do_train", "--do_eval", "--max_steps", "1", "--overwrite_output_dir")
    check("50000 labels: read, and a validation label outside them refused",
          p.returncode == 1 and
          'row 2: label "L50000" is not one of the 50000 labels' in p.stderr and
          "row 0:" not in p.stderr and "row 1:" not in p.stderr, p.stderr[-500:])


def main():
    setup()
    labels_as_datasets_reads_them()
    many_labels()
    hostile_labels()
    single_sentences_in_csv()
    for extra in ((), ("--bf16",)):
        one = pairs_by_task_name(1, *extra)
        two = pairs_by_task_name(2, *extra)
        if one and two:
            # fp32: reduction-order rounding only, grown over six epochs
            # on a small loss (~0.007): 4.2e-6 relative at the avx2 level
            # with the paired dropout draws (under 1e-6 with the masks
            # before them); bf16 rounds the weights, where such a
            # difference can flip a bit and grow: measured 5e-4 to 1.3e-3
            # relative at the generic, avx512 and avx512bf16 levels, 5.0e-3
            # with AMX's tiles. Another model is far above either bound
            # (the same run with --seed 4: 7.4e-2 apart); the strict fp32
            # check of ranks is ner_cli's, on the weights after 25 steps.
            tol = 2e-2 if extra else 1e-4
            check("%s2 ranks x batch 4 = 1 rank x batch 8, dropout on (eval_loss within %g "
                  "relative, same accuracy)" % (" ".join(extra) + " " if extra else "", tol),
                  abs(one["eval_loss"] - two["eval_loss"]) <= tol * one["eval_loss"] and
                  one["eval_accuracy"] == two["eval_accuracy"], (one, two))
    regression()
    multi_label()
    two_ranks_regression_and_multi_label()
    mnli_with_distilbert()
    refusals()
    print("glue_cli: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
