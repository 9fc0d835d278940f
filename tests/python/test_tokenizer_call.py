"""Calling a Tokenizer as Transformers users do: tok(texts, padding=True,
truncation=True, max_length=..., return_tensors="np"), text pairs, and
is_split_into_words with word_ids() as run_ner.py aligns its labels. Each
row is checked against encode()/encode_pair() (themselves held to the Rust
tokenizers library in tests/tokenizer), and padding, truncation and word
ids against the rules Transformers documents."""

import os
import shutil
import tempfile
import unittest

from cputrain import BatchEncoding, Tokenizer

from helpers import needs_numpy, np

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "##s", "sat", "on",
         "mat", "u", ".", "s", "is", "big", "!", "dog", "##gy"]


class TokenizerCallTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="cputrain-tokcall-")
        with open(os.path.join(cls.dir, "vocab.txt"), "w") as f:
            f.write("\n".join(VOCAB) + "\n")
        cls.tok = Tokenizer(cls.dir)

    @classmethod
    def tearDownClass(cls):
        cls.tok.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_one_text_gives_the_encode_lists(self):
        enc = self.tok("The cats sat!")
        self.assertIsInstance(enc, BatchEncoding)
        one = self.tok.encode("The cats sat!")
        self.assertEqual(enc["input_ids"], one["input_ids"])
        self.assertEqual(enc.attention_mask, one["attention_mask"])
        self.assertEqual(sorted(enc), ["attention_mask", "input_ids", "token_type_ids"])
        self.assertEqual(enc.word_ids(), one["word_ids"])

    def test_padding_to_the_longest_and_to_max_length(self):
        texts = ["the cat", "the cats sat on the mat", "dog"]
        enc = self.tok(texts, padding=True)
        lengths = [len(self.tok.encode(t)["input_ids"]) for t in texts]
        longest = max(lengths)
        for row, n, t in zip(range(3), lengths, texts):
            self.assertEqual(enc["input_ids"][row][:n], self.tok.encode(t)["input_ids"])
            self.assertEqual(enc["input_ids"][row][n:], [0] * (longest - n))  # [PAD] is 0
            self.assertEqual(enc["attention_mask"][row], [1] * n + [0] * (longest - n))
            self.assertEqual(enc.word_ids(row)[n:], [None] * (longest - n))
        enc = self.tok(texts, padding="max_length", max_length=12)
        self.assertEqual({len(r) for r in enc["input_ids"]}, {12})
        enc = self.tok(texts, padding=True, pad_to_multiple_of=8)
        self.assertEqual({len(r) for r in enc["input_ids"]}, {16})

    def test_truncation_keeps_the_first_window_unless_overflow_is_asked_for(self):
        text = "the cats sat on the mat the dog sat"
        enc = self.tok([text], truncation=True, max_length=6)
        self.assertEqual(enc["input_ids"], [self.tok.encode(text, max_length=6)[0]["input_ids"]])
        enc = self.tok([text, "dog"], truncation=True, max_length=6, stride=1,
                       return_overflowing_tokens=True)
        windows = self.tok.encode(text, max_length=6, stride=1)
        self.assertEqual(enc["input_ids"][:len(windows)], [w["input_ids"] for w in windows])
        self.assertEqual(enc["overflow_to_sample_mapping"], [0] * len(windows) + [1])
        with self.assertRaisesRegex(ValueError, "only_second"):
            self.tok("dog", truncation="only_second", max_length=4)

    def test_pairs_as_encode_pair(self):
        enc = self.tok(["the cat"], ["sat on the mat"], truncation="only_second", max_length=8,
                       return_offsets_mapping=True)
        w = self.tok.encode_pair("the cat", "sat on the mat", max_length=8, stride=0,
                                 padding=False)[0]
        self.assertEqual(enc["input_ids"], [w["input_ids"]])
        self.assertEqual(enc["token_type_ids"], [w["token_type_ids"]])
        self.assertEqual(enc["offset_mapping"], [w["offset_mapping"]])
        self.assertEqual(enc.sequence_ids(0), w["sequence_ids"])

    def test_words_map_back_to_the_words_given(self):
        # "u.s." is one word given, four pieces to BERT's pre-tokenizer.
        words = ["the", "u.s.", "is", "big", "!"]
        enc = self.tok(words, is_split_into_words=True)
        tokens = [self.tok.id_to_token(i) for i in enc["input_ids"]]
        self.assertEqual(tokens, ["[CLS]", "the", "u", ".", "s", ".", "is", "big", "!", "[SEP]"])
        self.assertEqual(enc.word_ids(), [None, 0, 1, 1, 1, 1, 2, 3, 4, None])
        # run_ner's alignment: the first sub-token of each word gets its label.
        batch = self.tok([["dog", "dog"], ["the", "doggy"]], is_split_into_words=True,
                         padding=True)
        self.assertEqual(batch.word_ids(1), [None, 0, 1, 1, None])
        self.assertEqual(batch.word_ids(0), [None, 0, 1, None, None])
        with self.assertRaises(TypeError):
            self.tok([["dog", 3]], is_split_into_words=True)

    @needs_numpy
    def test_numpy_arrays(self):
        enc = self.tok(["the cat", "dog"], padding=True, return_tensors="np",
                       return_offsets_mapping=True)
        self.assertEqual(enc["input_ids"].shape, (2, 4))
        self.assertEqual(enc["offset_mapping"].shape, (2, 4, 2))
        self.assertEqual(enc["input_ids"].dtype, np.int64)
        with self.assertRaisesRegex(ValueError, "padding=True"):
            self.tok(["the cat", "dog"], return_tensors="np")
        with self.assertRaisesRegex(ValueError, "numpy"):
            self.tok("dog", return_tensors="pt")


if __name__ == "__main__":
    unittest.main()
