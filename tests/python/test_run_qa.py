"""SQuAD from Python: SquadExamples, squad_score, QAFeatures and
postprocess (_squad.py), and `python3 -m cputrain.run_qa` end to end on the
built-in demo data -- the files it writes, finite metrics, and the same
results as tools/cputrain-qa given the same command line."""

import gc
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import cputrain
from cputrain import (CputrainError, Dataset, Model, Predictions, QAFeatures, SquadExamples,
                      SquadScores, Tokenizer, postprocess, squad_score)

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SQUAD_V1 = os.path.join(ROOT, "tests", "data", "squad_v1.json")
SQUAD_V2 = os.path.join(ROOT, "tests", "data", "squad_v2.json")
GENERATE = os.path.join(ROOT, "data", "demo", "generate.py")

# A short demo run: 30 optimizer steps of batch 32 on 800 training
# questions, evaluated on 100 (at step 15 and at the end).
RUN_ARGS = ["--train_file", "{data}/train.json", "--validation_file", "{data}/validation.json",
            "--config_name", "{data}/config.json", "--tokenizer_name", "{data}",
            "--do_train", "--do_eval", "--max_steps", "30", "--max_train_samples", "800",
            "--max_eval_samples", "100", "--per_device_train_batch_size", "32",
            "--learning_rate", "1e-3", "--warmup_ratio", "0.1", "--max_seq_length", "96",
            "--doc_stride", "32", "--bf16", "--use_cpu", "--logging_steps", "10",
            "--save_strategy", "no", "--seed", "42", "--disable_tqdm",
            "--eval_strategy", "steps", "--eval_steps", "15", "--output_dir", "{out}"]


def demo_data(folder):
    subprocess.run([sys.executable, GENERATE, folder], check=True, stdout=subprocess.DEVNULL)


class ScoreTest(unittest.TestCase):
    """squad_score on hand-made predictions, values worked out by hand from
    the official normalisation (lower case, no punctuation or articles)."""

    def test_v1_exact_and_f1(self):
        answers = [["Denver Broncos", "The Denver Broncos"], ["24\u201310"], ["third"]]
        preds = ["denver broncos!",   # normalises to a reference: EM 1, F1 1
                 "24",                # "24\u201310" is one token (en dash kept): 0, 0
                 "the third title"]   # "third title" vs "third": EM 0, F1 2/3
        scores = squad_score(preds, answers)
        self.assertEqual(list(scores), ["exact_match", "f1"])
        self.assertAlmostEqual(scores["exact_match"], 100 / 3, places=9)
        self.assertAlmostEqual(scores["f1"], 100 * (1 + 0 + 2 / 3) / 3, places=9)

    def test_best_reference_counts(self):
        # F1 is the best over the references: "Broncos" vs "Denver Broncos" 2/3.
        self.assertAlmostEqual(squad_score(["Broncos"], [["Denver Broncos", "x"]])["f1"],
                               100 * 2 / 3, places=9)
        # Answers as `datasets` holds them, and {"prediction_text"} dicts.
        scores = squad_score([{"id": "a", "prediction_text": "Paris"}],
                             [{"text": ["Paris"], "answer_start": [0]}])
        self.assertEqual(scores, {"exact_match": 100.0, "f1": 100.0})

    def test_none_is_unanswered(self):
        scores = squad_score([None, "x"], [["a"], ["x"]])
        self.assertEqual(scores, {"exact_match": 50.0, "f1": 50.0})

    def test_v2(self):
        scores = squad_score(["cat", "", "dog"], [["a cat"], [], ["a cow"]],
                             version_2_with_negative=True)
        self.assertEqual(scores["total"], 3)
        self.assertIsInstance(scores["total"], int)
        self.assertEqual(scores["HasAns_total"], 2)
        self.assertEqual(scores["NoAns_total"], 1)
        self.assertAlmostEqual(scores["exact"], 200 / 3, places=9)
        self.assertAlmostEqual(scores["f1"], 200 / 3, places=9)
        self.assertAlmostEqual(scores["HasAns_exact"], 50.0, places=9)
        self.assertAlmostEqual(scores["NoAns_exact"], 100.0, places=9)
        for name in ("best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh"):
            self.assertIn(name, scores)

    def test_article_only(self):
        # The official v1 script: EM compares normalised strings ("" == ""),
        # F1 counts common tokens, of which there are none.
        self.assertEqual(squad_score(["a"], [["the"]]), {"exact_match": 100.0, "f1": 0.0})

    def test_errors(self):
        with self.assertRaises(ValueError):
            squad_score(["a", "b"], [["a"]])
        with self.assertRaises(TypeError):
            squad_score("a", [["a"]])

    def test_scores_object(self):
        # (Not "a": an article normalises to nothing, which the v1 metric
        # scores EM 1 but F1 0, as the official script does.)
        with SquadScores.compute(["x"], [["x"]]) as scores:
            scores.add_prefix("eval")
            scores.set("eval_samples", 7)
            scores.set("epoch", 2.0, integer=False)
            self.assertEqual(dict(scores), {"eval_exact_match": 100.0, "eval_f1": 100.0,
                                            "eval_samples": 7, "epoch": 2.0})
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "eval_results.json")
                scores.save(path)
                with open(path) as f:
                    text = f.read()
                self.assertEqual(json.loads(text), dict(scores))
                self.assertEqual(text, json.dumps(dict(scores), indent=4, sort_keys=True))
        with self.assertRaises(ValueError):
            scores["eval_f1"]


class ExamplesTest(unittest.TestCase):

    def test_load_v1(self):
        with SquadExamples.load(SQUAD_V1) as ex:
            self.assertEqual(len(ex), 6)
            self.assertEqual(ex.ids, ["sb-1", "sb-2", "sb-3", "uni-1", "uni-2", "uni-3"])
            self.assertEqual(ex.questions[0], "Which NFL team won Super Bowl 50?")
            self.assertEqual(ex.titles[0], "Super_Bowl_50")
            self.assertEqual(ex.contexts[0], ex.contexts[1])  # one paragraph
            self.assertEqual(ex.answers[0], {"text": ["Denver Broncos", "The Denver Broncos",
                                                      "Denver Broncos"],
                                             "answer_start": [49, 45, 49]})
            self.assertEqual(ex.answers[1]["text"], ["24\u201310"])
            row = ex[1]
            self.assertEqual(row["context"][95:95 + len("24\u201310")], "24\u201310")
            self.assertEqual(ex.context_chars(0), len(ex.contexts[0]))
            first = ex.answer_list(0)[0]
            self.assertTrue(first["matches"])
            self.assertEqual(ex.find("sb-2"), 1)
            with self.assertRaises(KeyError):
                ex.find("nope")
            self.assertEqual(ex.stats["answer_mismatch"], 1)  # uni-3, kept
            self.assertEqual(ex[-1]["id"], "uni-3")
            with self.assertRaises(IndexError):
                ex[6]
            # Perfect predictions score 100 against the examples themselves.
            perfect = [a["text"][0] for a in ex.answers]
            self.assertEqual(squad_score(perfect, ex), {"exact_match": 100.0, "f1": 100.0})
            by_id = dict(zip(ex.ids, perfect))
            self.assertEqual(squad_score(by_id, ex), {"exact_match": 100.0, "f1": 100.0})
            self.assertEqual(squad_score(perfect[:2], ex), {"exact_match": 100.0, "f1": 100.0})
        with self.assertRaises(ValueError):
            len(ex)

    def test_load_v2(self):
        ex = SquadExamples.load(SQUAD_V2)
        counts = [len(a["text"]) for a in ex.answers]
        self.assertIn(0, counts)
        preds = [a["text"][0] if a["text"] else "" for a in ex.answers]
        self.assertEqual(squad_score(preds, ex, version_2_with_negative=True)["exact"], 100.0)

    def test_missing_file(self):
        with self.assertRaises(CputrainError):
            SquadExamples.load(os.path.join(ROOT, "tests", "data", "no-such-file.json"))


class FeaturesTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="cputrain-qa-features-")
        cls.data = os.path.join(cls.tmp, "data")
        demo_data(cls.data)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_features_and_postprocess(self):
        tok = Tokenizer(self.data)
        features = QAFeatures.create(tok, SquadExamples.load(os.path.join(self.data,
                                                                          "validation.json")),
                                     max_seq_length=64, doc_stride=16, max_examples=20)
        gc.collect()  # the features keep their examples alive
        self.assertEqual(features.n_examples, 20)
        n = len(features)
        self.assertGreaterEqual(n, 20)
        self.assertEqual(features.seq_len, 64)
        index = list(features.example_index)
        self.assertEqual(index, sorted(index))
        self.assertEqual(set(index), set(range(20)))
        self.assertEqual(len(features.offsets), n)

        data = features.dataset
        self.assertIsInstance(data, Dataset)
        self.assertEqual((len(data), data.seq_len), (n, 64))
        with self.assertRaises(TypeError):
            data.add([0] * 64, (0, 0))
        data.close()  # lets go, frees nothing
        self.assertEqual(len(features.dataset), n)

        model = Model.create(os.path.join(self.data, "config.json"), seed=1)
        start, end = features.logits(model, batch_size=8)
        self.assertTrue(model.training)  # restored
        preds = postprocess(features, start, end, n_best_size=5, max_answer_length=10)
        self.assertIsInstance(preds, Predictions)
        self.assertEqual(len(preds), 20)
        self.assertEqual(preds.ids, features.examples.ids[:20])
        contexts = features.examples.contexts
        for i in range(20):
            # "empty": utils_qa.py's stand-in when no span is valid
            self.assertTrue(preds[i] == "empty" or preds[i] in contexts[i], preds[i])
            best = preds.nbest(i)
            self.assertLessEqual(len(best), 5)
            self.assertEqual(best[0]["text"], preds[i])
            self.assertAlmostEqual(sum(b["probability"] for b in best), 1.0, places=5)
        self.assertTrue(math.isnan(preds.null_odds(0)))
        scores = squad_score(preds, features.examples)
        self.assertTrue(all(math.isfinite(v) for v in scores.values()))
        with tempfile.TemporaryDirectory() as out:
            preds.save(out, "eval")
            with open(os.path.join(out, "eval_predictions.json")) as f:
                self.assertEqual(json.load(f), preds.to_dict())
            self.assertTrue(os.path.exists(os.path.join(out, "eval_nbest_predictions.json")))
        with self.assertRaises(ValueError):
            postprocess(features, start[:1], end)
        features.close()
        with self.assertRaises(ValueError):
            features.dataset

    def test_progress_callbacks(self):
        tok = Tokenizer(self.data)
        examples = SquadExamples.load(os.path.join(self.data, "validation.json"))
        seen = []
        features = QAFeatures.create(tok, examples, max_seq_length=64, doc_stride=16,
                                     max_examples=20, progress=lambda d, t: seen.append((d, t)))
        self.assertEqual(seen[0], (0, 20))
        self.assertEqual(seen[-1], (20, 20))
        with self.assertRaisesRegex(CputrainError, "stopped by the progress callback"):
            QAFeatures.create(tok, examples, 64, 16, 20, progress=lambda d, t: True)

        def boom(done, total):
            raise KeyError("from the callback")
        with self.assertRaises(KeyError):
            QAFeatures.create(tok, examples, 64, 16, 20, progress=boom)
        batches = []
        model = Model.create(os.path.join(self.data, "config.json"), seed=1)
        features.logits(model, batch_size=8, progress=lambda d, t: batches.append((d, t)))
        n = -(-len(features) // 8)
        self.assertEqual(batches, [(k, n) for k in range(1, n + 1)])
        model.close()
        features.close()


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(cputrain.__file__)))] +
        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["CPUTRAIN_LIBRARY"] = cputrain.library_path
    env.setdefault("HF_HUB_OFFLINE", "1")  # a Hub id never reaches the network here
    return env


class RunQATest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="cputrain-run-qa-")
        cls.data = os.path.join(cls.tmp, "data")
        demo_data(cls.data)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def args(self, out):
        return [a.format(data=self.data, out=out) for a in RUN_ARGS]

    def run_qa(self, argv):
        return subprocess.run([sys.executable, "-m", "cputrain.run_qa"] + argv, env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=300)

    def test_demo_run(self):
        out = os.path.join(self.tmp, "out")
        p = self.run_qa(self.args(out))
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("evaluation: 100 examples, 100 features", p.stdout)
        for name in ("config.json", "model.safetensors", "train_results.json",
                     "trainer_state.json", "eval_results.json", "eval_predictions.json",
                     "eval_nbest_predictions.json",
                     # the tokenizer, saved by the Trainer beside the model
                     "vocab.txt", "tokenizer_config.json", "special_tokens_map.json",
                     "tokenizer.json"):
            path = os.path.join(out, name)
            self.assertTrue(os.path.getsize(path) > 0, name)
        self.assertFalse(os.path.exists(os.path.join(out, "eval_null_odds.json")))
        with open(os.path.join(out, "eval_results.json")) as f:
            metrics = json.load(f)
        self.assertEqual(sorted(metrics), ["epoch", "eval_exact_match", "eval_f1",
                                           "eval_samples"])
        self.assertEqual(metrics["eval_samples"], 100)
        for name in ("eval_exact_match", "eval_f1", "epoch"):
            self.assertTrue(math.isfinite(metrics[name]), name)
        self.assertTrue(0 <= metrics["eval_exact_match"] <= metrics["eval_f1"] <= 100)
        with open(os.path.join(out, "eval_predictions.json")) as f:
            self.assertEqual(len(json.load(f)), 100)
        with open(os.path.join(out, "trainer_state.json")) as f:
            history = json.load(f)["log_history"]
        evals = [e for e in history if "eval_f1" in e]
        self.assertEqual([e["step"] for e in evals], [15, 30])  # the eval callback ran
        self.assertTrue(all(math.isfinite(e["eval_exact_match"]) for e in evals))
        self.assertEqual(evals[-1]["eval_f1"], metrics["eval_f1"])

        # The same command line through tools/cputrain-qa gives the same files.
        tool = os.path.join(os.path.dirname(os.path.dirname(cputrain.library_path)), "bin",
                            "cputrain-qa")
        if not os.path.exists(tool):
            self.skipTest("no cputrain-qa beside the library to compare with")
        c_out = os.path.join(self.tmp, "c-out")
        c = subprocess.run([tool] + self.args(c_out), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True, timeout=300)
        self.assertEqual(c.returncode, 0, c.stdout)
        for name in ("eval_results.json", "eval_predictions.json",
                     "eval_nbest_predictions.json"):
            with open(os.path.join(out, name), "rb") as a, open(os.path.join(c_out, name),
                                                                "rb") as b:
                self.assertEqual(a.read(), b.read(), name)
        # all_results.json: train_ and eval_ results alike, but for the timings.
        merged = []
        for folder in (out, c_out):
            with open(os.path.join(folder, "all_results.json")) as f:
                merged.append({k: v for k, v in json.load(f).items()
                               if not (k.endswith("_per_second") or k.endswith("_runtime"))})
        self.assertEqual(merged[0], merged[1])
        self.assertIn("train_loss", merged[0])
        self.assertEqual(merged[0]["eval_f1"], metrics["eval_f1"])
        # The model card: the same text but for the folder's name.
        with open(os.path.join(out, "README.md")) as a, \
                open(os.path.join(c_out, "README.md")) as b:
            card, c_card = a.read(), b.read()
        self.assertEqual(card, c_card.replace("c-out", "out"))
        for text in ("# out\n", "Trained on the CPU with libcputrain ", "- learning_rate: 0.001\n",
                     "- training_steps: 30\n", "- lr_scheduler_warmup_ratio: 0.1\n",
                     "- mixed_precision_training: bf16", "- Exact Match: ", "- F1: ",
                     "This model was trained from scratch"):
            self.assertIn(text, card)

    def test_predict_matches_the_c_tool(self):
        """--do_predict --test_file --max_predict_samples: run_qa and
        cputrain-qa write the same predict_* files, predict_results.json
        (test_-prefixed metrics, predict_samples) and all_results.json."""
        tool = os.path.join(os.path.dirname(os.path.dirname(cputrain.library_path)), "bin",
                            "cputrain-qa")
        argv = ["--config_name", os.path.join(self.data, "config.json"), "--tokenizer_name",
                self.data, "--do_predict", "--test_file",
                os.path.join(self.data, "validation.json"), "--max_predict_samples", "12",
                "--max_seq_length", "96", "--doc_stride", "32", "--use_cpu", "--seed", "42",
                "--disable_tqdm"]
        out = os.path.join(self.tmp, "predict")
        p = self.run_qa(argv + ["--output_dir", out])
        self.assertEqual(p.returncode, 0, p.stdout)
        with open(os.path.join(out, "predict_predictions.json")) as f:
            self.assertEqual(len(json.load(f)), 12)
        with open(os.path.join(out, "predict_results.json")) as f:
            metrics = json.load(f)
        self.assertEqual(sorted(metrics), ["predict_samples", "test_exact_match", "test_f1"])
        if not os.path.exists(tool):
            self.skipTest("no cputrain-qa beside the library to compare with")
        c_out = os.path.join(self.tmp, "c-predict")
        c = subprocess.run([tool] + argv + ["--output_dir", c_out], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True, timeout=300)
        self.assertEqual(c.returncode, 0, c.stdout)
        for name in ("predict_predictions.json", "predict_nbest_predictions.json",
                     "predict_results.json", "all_results.json"):
            with open(os.path.join(out, name), "rb") as a, open(os.path.join(c_out, name),
                                                                "rb") as b:
                self.assertEqual(a.read(), b.read(), name)

    def test_two_ranks_match_the_c_tool(self):
        """Two ranks started the torchrun way (shared memory): run_qa and
        cputrain-qa write the same model, metrics and predictions, and only
        rank 0 prints the metrics."""
        tool = os.path.join(os.path.dirname(os.path.dirname(cputrain.library_path)), "bin",
                            "cputrain-qa")
        if not os.path.exists(tool):
            self.skipTest("no cputrain-qa beside the library to compare with")
        outs = {}
        for name, command in (("py", [sys.executable, "-m", "cputrain.run_qa"]),
                              ("c", [tool])):
            out = os.path.join(self.tmp, "ranks-" + name)
            procs = []
            for rank in (0, 1):
                env = _env()
                env.update(RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank),
                           LOCAL_WORLD_SIZE="2", OMP_NUM_THREADS="1",
                           CPUTRAIN_DIST_JOB="run-qa-test-%d-%s" % (os.getpid(), name))
                procs.append(subprocess.Popen(
                    command + self.args(out) + ["--max_steps", "8", "--eval_steps", "4",
                                                "--per_device_train_batch_size", "16",
                                                "--ddp_backend", "shm", "--ddp_timeout", "120"],
                    env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    universal_newlines=True))
            logs = [p.communicate(timeout=300)[0] for p in procs]
            for p, log in zip(procs, logs):
                self.assertEqual(p.returncode, 0, log)
            self.assertIn("eval metrics", logs[0])
            self.assertNotIn("eval metrics", logs[1])
            outs[name] = out
        for name in ("model.safetensors", "eval_results.json", "eval_predictions.json",
                     "eval_nbest_predictions.json"):
            with open(os.path.join(outs["py"], name), "rb") as a, \
                    open(os.path.join(outs["c"], name), "rb") as b:
                self.assertEqual(a.read(), b.read(), name)

    def test_help_and_bad_arguments(self):
        p = self.run_qa(["--help"])
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("--doc_stride", p.stdout)
        self.assertIn("--learning_rate", p.stdout)  # the library's TrainingArguments table
        p = self.run_qa(["--no_such_option", "1", "--output_dir", self.tmp])
        self.assertEqual(p.returncode, 2)
        self.assertIn("no_such_option", p.stdout)
        p = self.run_qa(["--do_eval", "--config_name", "bert-test", "--output_dir", self.tmp])
        self.assertEqual(p.returncode, 2)
        self.assertIn("--validation_file", p.stdout)
        # HfArgumentParser's habits: a prefix, --version
        p = self.run_qa(["--versio"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("ambiguous option: could match", p.stdout)
        p = self.run_qa(["--version"])
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("libcputrain", p.stdout)
        # a tokenizer larger than the model's embedding: refused at load
        with open(os.path.join(self.data, "config.json")) as f:
            config = json.load(f)
        config["vocab_size"] = 8
        small = os.path.join(self.tmp, "small_vocab.json")
        with open(small, "w") as f:
            json.dump(config, f)
        p = self.run_qa(["--do_train", "--config_name", small, "--tokenizer_name", self.data,
                         "--train_file", os.path.join(self.data, "train.json"),
                         "--output_dir", os.path.join(self.tmp, "small")])
        self.assertEqual(p.returncode, 2, p.stdout)
        self.assertIn("but the model's embedding only 8", p.stdout)

    def test_argument_fates_and_hub_ids(self):
        base = ["--do_eval", "--tokenizer_name", self.data, "--validation_file",
                os.path.join(self.tmp, "missing.json"), "--output_dir",
                os.path.join(self.tmp, "never"), "--max_seq_length", "64", "--doc_stride", "16"]
        cfg = ["--config_name", os.path.join(self.data, "config.json")]
        p = self.run_qa(base + cfg + ["--overwrite_cache", "true", "--dataloader_num_workers",
                                      "2"])
        self.assertIn("--overwrite_cache true has no effect here: features are built", p.stdout)
        self.assertIn("--dataloader_num_workers 2 has no effect here", p.stdout)
        p = self.run_qa(base + cfg + ["--push_to_hub"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("push_to_hub True is refused", p.stdout)
        self.assertIn("Hub's CLI", p.stdout)
        p = self.run_qa(base + ["--model_name_or_path", "some-org/some-model"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("some-org/some-model is not a local folder; as a Hub id", p.stdout)
        p = self.run_qa(base + ["--model_name_or_path", "bert-test"])
        self.assertIn("RANDOM weights", p.stdout)
        self.assertEqual(p.stdout.count("placement:"), 1, p.stdout)

    def test_library_error_is_reported(self):
        p = self.run_qa(["--do_eval", "--config_name", os.path.join(self.data, "config.json"),
                         "--tokenizer_name", self.data, "--validation_file",
                         os.path.join(self.tmp, "missing.json"), "--output_dir",
                         os.path.join(self.tmp, "never"), "--max_seq_length", "64",
                         "--doc_stride", "16"])
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("missing.json", p.stdout)

    def small_run(self, out, *extra):
        return self.run_qa(["--train_file", os.path.join(self.data, "train.json"),
                            "--config_name", os.path.join(self.data, "config.json"),
                            "--tokenizer_name", self.data, "--do_train",
                            "--max_train_samples", "64", "--per_device_train_batch_size", "32",
                            "--max_seq_length", "96", "--doc_stride", "32", "--use_cpu",
                            "--disable_tqdm", "--seed", "42", "--output_dir", out] + list(extra))

    def test_output_dir_that_holds_files(self):
        """run_qa.py's rule: other files refuse, checkpoints resume the last."""
        out = os.path.join(self.tmp, "busy-dir")
        os.makedirs(out)
        with open(os.path.join(out, "notes.txt"), "w") as f:
            f.write("not a run\n")
        p = self.small_run(out, "--max_steps", "1")
        self.assertEqual(p.returncode, 2, p.stdout)
        self.assertIn("--overwrite_output_dir", p.stdout)
        self.assertFalse(os.path.exists(os.path.join(out, "model.safetensors")))
        p = self.small_run(out, "--max_steps", "2", "--save_steps", "1", "--overwrite_output_dir")
        self.assertEqual(p.returncode, 0, p.stdout)
        p = self.small_run(out, "--max_steps", "3", "--save_steps", "1")
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("resuming training at %s" % os.path.join(out, "checkpoint-2"), p.stdout)
        with open(os.path.join(out, "trainer_state.json")) as f:
            self.assertEqual(json.load(f)["global_step"], 3)

    def test_eval_and_predict_alone_refused_on_a_held_output_dir(self):
        """While another run holds output_dir (here this process, through
        the Python lock API), a run that only evaluates or predicts is
        refused before it writes a file, naming the holder's pid."""
        out = os.path.join(self.tmp, "held")
        common = ["--config_name", os.path.join(self.data, "config.json"), "--tokenizer_name",
                  self.data, "--max_seq_length", "96", "--doc_stride", "32", "--use_cpu",
                  "--disable_tqdm", "--max_eval_samples", "4", "--max_predict_samples", "4",
                  "--overwrite_output_dir", "--output_dir", out]
        validation = os.path.join(self.data, "validation.json")
        with cputrain.OutputLock(out):
            for flags in (["--do_eval", "--validation_file", validation],
                          ["--do_predict", "--test_file", validation]):
                p = self.run_qa(flags + common)
                self.assertEqual(p.returncode, 1, p.stdout)
                self.assertIn("output_dir: CT_ERR_BUSY: output_dir %s is in use by another run "
                              "(pid %d" % (out, os.getpid()), p.stdout)
            self.assertEqual(sorted(os.listdir(out)), [".lock"])
        p = self.run_qa(["--do_eval", "--validation_file", validation] + common)
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertTrue(os.path.exists(os.path.join(out, "eval_results.json")))

    def test_run_that_cannot_learn_exits_non_zero(self):
        out = os.path.join(self.tmp, "nan-run")
        p = self.small_run(out, "--max_steps", "4", "--learning_rate", "1e308",
                           "--save_strategy", "no")
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("CT_ERR_NUMERIC", p.stdout)
        self.assertIn("did not learn", p.stdout)


if __name__ == "__main__":
    unittest.main()
