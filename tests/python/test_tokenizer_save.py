"""Tokenizer.save, the Trainer saving its tokenizer beside the model and in
checkpoints, and Model.config_task: the binding's side (the files' contents
are checked in check_tokenizer_save.c and against the Rust library in
tests/tokenizer)."""

import json
import os
import shutil
import tempfile
import unittest

from cputrain import CputrainError, Dataset, Model, Status, Task, Tokenizer, Trainer, TrainingArgs

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "##s", "sat", "on",
         "mat", "caf\u00e9", "cafe", "\u4e2d", "!"]
FILES = ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.json")
TEXTS = ["The cats sat on the mat!", "CAF\u00c9 cafe \u4e2d\u4e2d dog", "[MASK] the[SEP]cat"]


class TokenizerSaveTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="cputrain-toksave-")
        self.src = os.path.join(self.dir, "src")
        os.mkdir(self.src)
        with open(os.path.join(self.src, "vocab.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(VOCAB) + "\n")
        with open(os.path.join(self.src, "tokenizer_config.json"), "w") as f:
            json.dump({"do_lower_case": False, "model_max_length": 32}, f)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def assert_same(self, a, b):
        for name in ("do_lower_case", "strip_accents", "tokenize_chinese_chars", "clean_text",
                     "max_input_chars_per_word", "model_max_length", "split_special_tokens"):
            self.assertEqual(getattr(a, name), getattr(b, name), name)
        self.assertEqual(a.special_tokens, b.special_tokens)
        for text in TEXTS:
            self.assertEqual(a.encode(text), b.encode(text), text)
            self.assertEqual(a.encode_pair("the cat?", text, max_length=10, stride=2),
                             b.encode_pair("the cat?", text, max_length=10, stride=2), text)

    def test_save_and_load_back(self):
        out = os.path.join(self.dir, "out")
        os.mkdir(out)
        with Tokenizer(self.src) as tok:
            tok.clean_text = False
            tok.max_input_chars_per_word = 5
            paths = tok.save(out)
            self.assertEqual(paths, tuple(os.path.join(out, f) for f in FILES))
            for p in paths:
                self.assertTrue(os.path.getsize(p) > 0, p)
            with open(paths[0], encoding="utf-8") as f:
                self.assertEqual(f.read().split("\n")[:-1], VOCAB)
            with open(paths[1]) as f:
                config = json.load(f)
            self.assertEqual(config["tokenizer_class"], "BertTokenizer")
            self.assertIs(config["do_lower_case"], False)
            self.assertEqual(config["model_max_length"], 32)
            with open(paths[3]) as f:
                fast = json.load(f)
            self.assertIs(fast["normalizer"]["clean_text"], False)
            self.assertEqual(fast["model"]["max_input_chars_per_word"], 5)
            self.assertEqual(fast["model"]["vocab"], {t: i for i, t in enumerate(VOCAB)})
            with Tokenizer.from_folder(out) as back:
                self.assert_same(tok, back)
            # save_pretrained is the same call, as Transformers names it.
            again = os.path.join(self.dir, "again")
            os.mkdir(again)
            tok.save_pretrained(again)
            for f in FILES:
                with open(os.path.join(out, f), "rb") as x, open(os.path.join(again, f), "rb") as y:
                    self.assertEqual(x.read(), y.read(), f)

    def test_bad_folder(self):
        missing = os.path.join(self.dir, "missing")
        with Tokenizer(self.src) as tok:
            with self.assertRaises(CputrainError) as cm:
                tok.save(missing)
            self.assertEqual(cm.exception.status, Status.ERR_IO)
            self.assertIn(missing, str(cm.exception))
            self.assertFalse(os.path.exists(missing))
            with self.assertRaises(TypeError):
                tok.save(3)
            with self.assertRaises(ValueError):
                tok.save("a\0b")
        with self.assertRaises(ValueError):  # closed
            tok.save(self.dir)


class TrainerTokenizerTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="cputrain-trainertok-")
        with open(os.path.join(self.dir, "vocab.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(VOCAB) + "\n")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_trainer_saves_its_tokenizer(self):
        ids = [[2, 5 + i % 8, 6, 3, 8, 9, 10, 3] for i in range(8)]
        ds = Dataset.from_arrays("question-answering", ids, [[4, 5]] * 8)
        out = os.path.join(self.dir, "out")
        model = Model.create("bert-test", task="question-answering", seed=1)
        tok = Tokenizer(self.dir)
        with TrainingArgs(output_dir=out, per_device_train_batch_size=4, max_steps=2,
                          save_steps=1, logging_steps=1) as args:
            with self.assertRaises(TypeError):
                Trainer(model, args, train_dataset=ds, tokenizer="vocab.txt")
            trainer = Trainer(model, args, train_dataset=ds, tokenizer=tok)
        self.assertIs(trainer.tokenizer, tok)
        trainer.train()
        for folder in (out, os.path.join(out, "checkpoint-1"), os.path.join(out, "checkpoint-2")):
            for f in FILES:
                self.assertTrue(os.path.isfile(os.path.join(folder, f)), (folder, f))
            with Tokenizer.from_folder(folder) as back:
                self.assertEqual(back.encode(TEXTS[0]), tok.encode(TEXTS[0]))
        # The saved folder names its head, so it loads as a whole model.
        self.assertEqual(Model.config_task(out), Task.QUESTION_ANSWERING)
        self.assertEqual(Model.config_task(os.path.join(out, "config.json")),
                         Task.QUESTION_ANSWERING)
        trainer.tokenizer = None
        self.assertIsNone(trainer.tokenizer)
        trainer.close()
        model.close()
        tok.close()

    def test_config_task_errors(self):
        with open(os.path.join(self.dir, "config.json"), "w") as f:
            json.dump({"model_type": "bert", "architectures": ["BertForPreTraining"]}, f)
        with self.assertRaises(CputrainError) as cm:
            Model.config_task(self.dir)
        self.assertEqual(cm.exception.status, Status.ERR_UNSUPPORTED)
        self.assertIn("BertForPreTraining", str(cm.exception))
        with open(os.path.join(self.dir, "config.json"), "w") as f:
            json.dump({"model_type": "bert", "architectures": ["BertForMaskedLM"]}, f)
        self.assertEqual(Model.config_task(self.dir), Task.MASKED_LM)


if __name__ == "__main__":
    unittest.main()
