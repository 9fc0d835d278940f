"""The result files Transformers writes next to the model: all_results.json
(Trainer.save_metrics merging every split's metrics, the trainer's own
train_ metrics included), config.json's torch_dtype naming the dtype
model.safetensors really holds, and trainer_state.json read back
(TrainerState) as Python's json reads it."""

import json
import os
import struct
import unittest

from cputrain import (CputrainError, Model, SquadScores, Status, Trainer, TrainerState,
                      TrainingArgs)

from helpers import TempDirTest, qa_dataset


def read_json(path):
    with open(path) as f:
        return json.load(f)


def safetensors_dtypes(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    return {v["dtype"] for k, v in header.items() if k != "__metadata__"}


class TempDir(TempDirTest):

    prefix = "cputrain-results-"


class AllResultsTest(TempDir):

    def scores(self, prefix):
        scores = SquadScores.compute(["paris", "rome"], [["paris"], ["oslo"]])
        self.addCleanup(scores.close)
        scores.add_prefix(prefix)
        scores.set(prefix + "_samples", 2, integer=True)
        return scores

    def test_splits_merge_as_save_metrics_does(self):
        self.scores("eval").save_metrics(self.dir, "eval")
        self.assertEqual(read_json(os.path.join(self.dir, "eval_results.json")),
                         {"eval_exact_match": 50.0, "eval_f1": 50.0, "eval_samples": 2})
        # Another split adds its entries; the same names take the new values.
        test = self.scores("test")
        test.set("eval_samples", 7, integer=True)
        test.save_metrics(self.dir, "predict")
        merged = read_json(os.path.join(self.dir, "all_results.json"))
        self.assertEqual(merged, {"eval_exact_match": 50.0, "eval_f1": 50.0, "eval_samples": 7,
                                  "test_exact_match": 50.0, "test_f1": 50.0, "test_samples": 2})
        self.assertIs(type(merged["test_samples"]), int)
        with open(os.path.join(self.dir, "all_results.json")) as f:
            text = f.read()
        # json.dump(indent=4, sort_keys=True): sorted, no final newline.
        self.assertEqual(text, json.dumps(merged, indent=4, sort_keys=True))

    def test_other_entries_survive(self):
        with open(os.path.join(self.dir, "all_results.json"), "w") as f:
            f.write('{"zz_note": "kept", "nan_loss": NaN, "nested": {"a": [1, 2]}, '
                    '"eval_f1": 1.0}')
        self.scores("eval").save_metrics(self.dir, "eval")
        merged = read_json(os.path.join(self.dir, "all_results.json"))
        self.assertEqual(merged["zz_note"], "kept")
        self.assertNotEqual(merged["nan_loss"], merged["nan_loss"])  # NaN
        self.assertEqual(merged["nested"], {"a": [1, 2]})
        self.assertEqual(merged["eval_f1"], 50.0)

    def test_a_broken_all_results_is_named_and_left_alone(self):
        path = os.path.join(self.dir, "all_results.json")
        for text in ("[1, 2]", "{not json"):
            with open(path, "w") as f:
                f.write(text)
            with self.subTest(text=text), self.assertRaises(CputrainError) as cm:
                self.scores("eval").save_metrics(self.dir, "eval")
            self.assertEqual(cm.exception.status, Status.ERR_FORMAT)
            self.assertIn("all_results.json", cm.exception.message)
            with open(path) as f:
                self.assertEqual(f.read(), text)

    def test_training_writes_train_metrics_into_all_results(self):
        out = os.path.join(self.dir, "out")
        os.makedirs(out)
        with open(os.path.join(out, "all_results.json"), "w") as f:
            f.write('{"eval_f1": 12.5}')
        model = Model.create("bert-test", seed=1)
        self.addCleanup(model.close)
        args = TrainingArgs(output_dir=out, per_device_train_batch_size=4, max_steps=2,
                            save_strategy="no", seed=11)
        self.addCleanup(args.close)
        trainer = Trainer(model, args, train_dataset=qa_dataset())
        self.addCleanup(trainer.close)
        trainer.train()
        train = read_json(os.path.join(out, "train_results.json"))
        self.assertEqual(sorted(train), ["epoch", "total_flos", "train_loss", "train_runtime",
                                         "train_samples", "train_samples_per_second",
                                         "train_steps_per_second"])
        self.assertEqual(train["train_samples"], 24)
        self.assertEqual(read_json(os.path.join(out, "all_results.json")),
                         dict(train, eval_f1=12.5))
        # overwrite_output_dir starts over: the earlier run's entries go.
        args.overwrite_output_dir = True
        trainer2 = Trainer(model, args, train_dataset=qa_dataset())
        self.addCleanup(trainer2.close)
        trainer2.train()
        self.assertNotIn("eval_f1", read_json(os.path.join(out, "all_results.json")))


class TrainerStateTest(TempDir):

    def test_reads_back_what_python_json_reads(self):
        out = os.path.join(self.dir, "out")
        model = Model.create("bert-test", seed=1)
        self.addCleanup(model.close)
        args = TrainingArgs(output_dir=out, per_device_train_batch_size=4, max_steps=4,
                            logging_steps=1, save_steps=2, seed=11)
        self.addCleanup(args.close)
        trainer = Trainer(model, args, train_dataset=qa_dataset())
        self.addCleanup(trainer.close)
        trainer.train()
        for folder in (out, os.path.join(out, "checkpoint-2")):
            expect = read_json(os.path.join(folder, "trainer_state.json"))
            state = TrainerState.load(folder)
            self.assertEqual(state.log_history, expect["log_history"])
            self.assertEqual(state.global_step, expect["global_step"])
            self.assertEqual(state.max_steps, 4)
            self.assertEqual(state.epoch, expect["epoch"])
            self.assertIsNone(state.best_metric)
        self.assertEqual(len([e for e in state.log_history if "loss" in e]), 2)

    def test_a_malformed_file_is_named(self):
        path = os.path.join(self.dir, "trainer_state.json")
        with open(path, "w") as f:
            f.write('{"log_history": [{"loss": "1.5", "step": 1}]}')
        with self.assertRaises(CputrainError) as e:
            TrainerState.load(self.dir)
        self.assertEqual(e.exception.status, Status.ERR_FORMAT)
        self.assertIn(path + ": log_history[0].loss: expected a number, found a string",
                      str(e.exception))


class TorchDtypeTest(TempDir):

    def test_torch_dtype_names_the_saved_dtype(self):
        model = Model.create("bert-test", seed=1)
        self.addCleanup(model.close)
        for dtype, st in (("float32", "F32"), ("bfloat16", "BF16"), ("float16", "F16")):
            out = os.path.join(self.dir, dtype)
            os.makedirs(out)
            model.save(out, dtype=dtype)
            with self.subTest(dtype=dtype):
                self.assertEqual(read_json(os.path.join(out, "config.json"))["torch_dtype"], dtype)
                self.assertEqual(safetensors_dtypes(os.path.join(out, "model.safetensors")), {st})

    def test_a_loaded_config_gets_the_dtype_of_the_new_weights(self):
        # A bf16 checkpoint saved again in float32 must not keep "bfloat16";
        # a config without the key gets it at its sorted place.
        model = Model.create("bert-test", seed=1)
        self.addCleanup(model.close)
        src = os.path.join(self.dir, "src")
        os.makedirs(src)
        model.save(src, dtype="bfloat16")
        loaded = Model.load(src)
        self.addCleanup(loaded.close)
        out = os.path.join(self.dir, "out")
        os.makedirs(out)
        loaded.save(out)
        config = read_json(os.path.join(out, "config.json"))
        self.assertEqual(config["torch_dtype"], "float32")

        path = os.path.join(src, "config.json")
        config = read_json(path)
        del config["torch_dtype"]
        with open(path, "w") as f:
            json.dump(config, f, indent=2, sort_keys=True)
        again = Model.load(src)
        self.addCleanup(again.close)
        out2 = os.path.join(self.dir, "out2")
        os.makedirs(out2)
        again.save(out2, dtype="bfloat16")
        with open(os.path.join(out2, "config.json")) as f:
            keys = list(json.load(f))
        self.assertIn("torch_dtype", keys)
        self.assertEqual(read_json(os.path.join(out2, "config.json"))["torch_dtype"], "bfloat16")
        self.assertEqual(keys, sorted(keys))


if __name__ == "__main__":
    unittest.main()
