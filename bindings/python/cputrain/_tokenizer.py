"""Tokenizer: the library's BERT WordPiece tokenizer (ct_tokenizer), with
the tokens, offsets and overflow windows of Transformers' BertTokenizerFast.

    tok = Tokenizer.from_folder("bert-base-uncased")    # vocab.txt + tokenizer_config.json
    tok.encode("Hello, world!")["input_ids"]            # [101, 7592, 1010, 2088, 999, 102]
    windows = tok.encode_pair(question, context, max_length=384, stride=128)
    windows[0]["offset_mapping"], windows[0]["sequence_ids"]
    tok.save("out")     # vocab.txt, tokenizer_config.json, special_tokens_map.json, tokenizer.json

Offsets count characters (code points) of the Python str, as Transformers'
offset_mapping does: text[start:end] is the token's span."""

import bisect
import ctypes
import enum
import numbers
import os

from ._errors import check
from ._handle import OwnedHandle
from ._lib import Handle, lib

try:
    import numpy as _np
except ImportError:  # return_tensors="np" then says what is missing
    _np = None


class Option(enum.IntEnum):
    """ct_tokenizer_option."""
    DO_LOWER_CASE = 0
    STRIP_ACCENTS = 1
    TOKENIZE_CHINESE_CHARS = 2
    CLEAN_TEXT = 3
    MAX_INPUT_CHARS_PER_WORD = 4
    MODEL_MAX_LENGTH = 5
    SPLIT_SPECIAL_TOKENS = 6


class Truncation(enum.IntEnum):
    """ct_truncation, with Transformers' names accepted by encode_pair."""
    NONE = 0
    LONGEST_FIRST = 1
    ONLY_FIRST = 2
    ONLY_SECOND = 3


_TRUNCATION_NAMES = {
    False: Truncation.NONE, None: Truncation.NONE, "do_not_truncate": Truncation.NONE,
    True: Truncation.LONGEST_FIRST, "longest_first": Truncation.LONGEST_FIRST,
    "only_first": Truncation.ONLY_FIRST, "only_second": Truncation.ONLY_SECOND,
}

_SPECIAL = {"unk": 0, "sep": 1, "pad": 2, "cls": 3, "mask": 4}
_SAVED_FILES = ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json",
                "tokenizer.json")


def _text(value, what):
    if isinstance(value, str):
        # Strict: a lone surrogate has no UTF-8 form (Rust strings refuse it too).
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    raise TypeError("%s must be a str or UTF-8 bytes, not %s" % (what, type(value).__name__))


def _count(value, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError("%s must be an int, not %s" % (what, type(value).__name__))
    if value < 0:
        raise ValueError("%s must not be negative" % what)
    return int(value)


def _padding(value):
    if value in (True, "max_length"):
        return 1
    if value in (False, None, "do_not_pad"):
        return 0
    raise ValueError("padding must be True/'max_length' or False/'do_not_pad', not %r" % (value,))


def _windows(handle):
    """Every window of a ct_encoding as a dict of lists, then free it."""
    try:
        out = []
        for w in range(lib.ct_encoding_num_windows(handle)):
            n = lib.ct_encoding_length(handle, w)

            def ints(fn, count=n):
                return fn(handle, w)[:count] if count else []

            offsets = ints(lib.ct_encoding_offsets, 2 * n)
            byte_offsets = ints(lib.ct_encoding_byte_offsets, 2 * n)
            out.append({
                "input_ids": ints(lib.ct_encoding_ids),
                "token_type_ids": ints(lib.ct_encoding_type_ids),
                "attention_mask": ints(lib.ct_encoding_attention_mask),
                "special_tokens_mask": ints(lib.ct_encoding_special_tokens_mask),
                "offset_mapping": list(zip(offsets[0::2], offsets[1::2])),
                "byte_offsets": list(zip(byte_offsets[0::2], byte_offsets[1::2])),
                "sequence_ids": [None if s < 0 else s
                                 for s in ints(lib.ct_encoding_sequence_ids)],
                "word_ids": [None if s < 0 else s for s in ints(lib.ct_encoding_word_ids)],
            })
        return out
    finally:
        lib.ct_encoding_free(handle)


class BatchEncoding(dict):
    """What calling a Tokenizer returns, as Transformers' BatchEncoding: a
    dict of input_ids, token_type_ids, attention_mask (and what was asked
    for besides), also readable as attributes, with word_ids(i) and
    sequence_ids(i) for row i (None for special tokens and padding)."""

    def __init__(self, data, word_ids, sequence_ids, batched):
        super().__init__(data)
        self._word_ids, self._sequence_ids, self._batched = word_ids, sequence_ids, batched

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def word_ids(self, batch_index=0):
        return list(self._word_ids[batch_index])

    def sequence_ids(self, batch_index=0):
        return list(self._sequence_ids[batch_index])


def _is_batch(text, split_words):
    if split_words:
        return isinstance(text, (list, tuple)) and bool(text) and \
            isinstance(text[0], (list, tuple))
    return isinstance(text, (list, tuple))


def _joined(words, what):
    """Pre-split words as one text joined by spaces, and where each word
    starts (in code points), so tokens map back to the word they came from."""
    if not isinstance(words, (list, tuple)) or not all(isinstance(w, str) for w in words):
        raise TypeError("%s must be a list of str with is_split_into_words" % what)
    starts, at = [], 0
    for w in words:
        starts.append(at)
        at += len(w) + 1
    return " ".join(words), starts


def _pad_rows(rows, length, pad_id):
    fill = {"input_ids": pad_id, "token_type_ids": 0, "attention_mask": 0,
            "special_tokens_mask": 1, "offset_mapping": (0, 0)}
    for row in rows:
        extra = length - len(row["input_ids"])
        if extra > 0:
            for key, value in fill.items():
                row[key] = row[key] + [value] * extra
            row["word_ids"] = row["word_ids"] + [None] * extra
            row["sequence_ids"] = row["sequence_ids"] + [None] * extra


class Tokenizer(OwnedHandle):
    """A BERT WordPiece tokenizer (a ct_tokenizer).

    Owns a C handle: use `with`, or close(); it is also freed when
    collected. Encoding is thread-safe; changing a setting while another
    thread encodes is not."""

    _free = lib.ct_tokenizer_free
    _what = "Tokenizer"

    __slots__ = ("_handle", "__weakref__")

    def __init__(self, path):
        """From a vocab.txt or a folder holding one (a tokenizer_config.json
        beside it sets lowercasing, accents and the special tokens)."""
        self._handle = None
        if not isinstance(path, (str, bytes, os.PathLike)):
            raise TypeError("path must be a str or path, not %s" % type(path).__name__)
        path = os.fspath(path)
        if isinstance(path, str):
            path = path.encode("utf-8", "surrogateescape")
        if b"\0" in path:
            raise ValueError("embedded NUL character in the path")
        handle = Handle()
        check(lib.ct_tokenizer_load(path, ctypes.byref(handle)))
        self._handle = handle

    @classmethod
    def from_file(cls, vocab_file):
        """From a vocab.txt (and the tokenizer_config.json next to it, if any)."""
        if os.path.isdir(vocab_file):
            raise IsADirectoryError("%s is a folder; use Tokenizer.from_folder" % vocab_file)
        return cls(vocab_file)

    @classmethod
    def from_folder(cls, folder):
        """From a model folder: vocab.txt, tokenizer_config.json,
        special_tokens_map.json as Transformers writes them."""
        if not os.path.isdir(folder):
            raise NotADirectoryError("%s is not a folder" % folder)
        return cls(folder)

    def save(self, folder):
        """Write vocab.txt, tokenizer_config.json, special_tokens_map.json
        and tokenizer.json into `folder` (which must exist), as
        BertTokenizerFast.save_pretrained does: Transformers, the tokenizers
        library and Tokenizer(folder) read back a tokenizer that encodes
        alike. All four files or none are replaced. Returns the file paths."""
        if not isinstance(folder, (str, bytes, os.PathLike)):
            raise TypeError("folder must be a str or path, not %s" % type(folder).__name__)
        folder = os.fspath(folder)
        raw = folder.encode("utf-8", "surrogateescape") if isinstance(folder, str) else folder
        if b"\0" in raw:
            raise ValueError("embedded NUL character in the path")
        check(lib.ct_tokenizer_save(self._live(), raw))
        return tuple(os.path.join(folder, name) for name in _SAVED_FILES)

    save_pretrained = save

    # ---- lifetime -------------------------------------------------------


    # ---- settings ---------------------------------------------------------

    def get_option(self, option):
        value = ctypes.c_int64()
        check(lib.ct_tokenizer_get_option(self._live(), Option(option), ctypes.byref(value)))
        return value.value

    def set_option(self, option, value):
        check(lib.ct_tokenizer_set_option(self._live(), Option(option), int(value)))

    def _flag(option):  # noqa: N805 - a property factory used in the class body
        return property(lambda self: bool(self.get_option(option)),
                        lambda self, v: self.set_option(option, bool(v)))

    do_lower_case = _flag(Option.DO_LOWER_CASE)
    tokenize_chinese_chars = _flag(Option.TOKENIZE_CHINESE_CHARS)
    clean_text = _flag(Option.CLEAN_TEXT)
    split_special_tokens = _flag(Option.SPLIT_SPECIAL_TOKENS)
    del _flag

    @property
    def strip_accents(self):
        """None (follow do_lower_case, as Transformers), True or False."""
        v = self.get_option(Option.STRIP_ACCENTS)
        return None if v < 0 else bool(v)

    @strip_accents.setter
    def strip_accents(self, value):
        self.set_option(Option.STRIP_ACCENTS, -1 if value is None else bool(value))

    @property
    def max_input_chars_per_word(self):
        return self.get_option(Option.MAX_INPUT_CHARS_PER_WORD)

    @max_input_chars_per_word.setter
    def max_input_chars_per_word(self, value):
        self.set_option(Option.MAX_INPUT_CHARS_PER_WORD, _count(value, "max_input_chars_per_word"))

    @property
    def model_max_length(self):
        """From tokenizer_config.json; None when it gave none."""
        v = self.get_option(Option.MODEL_MAX_LENGTH)
        return None if v < 0 else v

    # ---- vocabulary -------------------------------------------------------

    @property
    def vocab_size(self):
        return lib.ct_tokenizer_vocab_size(self._live())

    def __len__(self):
        return self.vocab_size

    def id_to_token(self, token_id):
        s = lib.ct_tokenizer_id_to_token(self._live(), token_id)
        return None if s is None else s.decode("utf-8")

    def token_to_id(self, token):
        data = _text(token, "token")
        if b"\0" in data:
            return None
        i = lib.ct_tokenizer_token_to_id(self._live(), data)
        return None if i < 0 else i

    @property
    def special_tokens(self):
        """{"unk_token": ("[UNK]", 100), ...}; mask_token is absent when the
        vocabulary has none."""
        out = {}
        for name, which in _SPECIAL.items():
            text = lib.ct_tokenizer_special_token(self._live(), which)
            if text is not None:
                out[name + "_token"] = (text.decode("utf-8"),
                                        lib.ct_tokenizer_special_id(self._live(), which))
        return out

    # ---- encoding ---------------------------------------------------------

    def encode(self, text, add_special_tokens=True, max_length=None, stride=0, padding=False):
        """One text as a dict of input_ids, token_type_ids, attention_mask,
        special_tokens_mask, offset_mapping, byte_offsets, sequence_ids and
        word_ids. With max_length, the text is truncated like
        tokenizer(text, truncation=True, max_length=..., stride=...,
        return_overflowing_tokens=True) and the result is the list of
        windows instead."""
        data = _text(text, "text")
        handle = Handle()
        check(lib.ct_tokenizer_encode(self._live(), data, len(data), int(bool(add_special_tokens)),
                                      0 if max_length is None else _count(max_length, "max_length"),
                                      _count(stride, "stride"), _padding(padding),
                                      ctypes.byref(handle)))
        windows = _windows(handle)
        return windows if max_length is not None else windows[0]

    def __call__(self, text, text_pair=None, add_special_tokens=True, padding=False,
                 truncation=None, max_length=None, stride=0, is_split_into_words=False,
                 pad_to_multiple_of=None, return_tensors=None, return_token_type_ids=True,
                 return_attention_mask=True, return_overflowing_tokens=False,
                 return_special_tokens_mask=False, return_offsets_mapping=False,
                 return_length=False):
        """tokenizer(text_or_texts, text_pair=None, ...) with Transformers'
        arguments and results: padding True/"longest" (to the longest row),
        "max_length" or False; truncation True/"longest_first",
        "only_first", "only_second" or False (max_length defaulting to
        model_max_length); is_split_into_words for lists of words (word_ids
        then index them); return_tensors "np" for numpy arrays; with
        return_overflowing_tokens the windows of every text and
        overflow_to_sample_mapping. A str gives one row's lists, a list a
        batch. Returns a BatchEncoding."""
        batched = _is_batch(text, is_split_into_words)
        texts = list(text) if batched else [text]
        pairs = None
        if text_pair is not None:
            pairs = list(text_pair) if batched else [text_pair]
            if len(pairs) != len(texts):
                raise ValueError("%d texts but %d text_pair entries" % (len(texts), len(pairs)))
        if return_tensors not in (None, "np"):
            raise ValueError("return_tensors=%r: this library returns lists or numpy arrays "
                             "(\"np\"), not framework tensors" % (return_tensors,))
        if truncation is None or truncation is False or truncation == "do_not_truncate":
            trunc = Truncation.NONE
        elif isinstance(truncation, Truncation):
            trunc = truncation
        elif truncation in _TRUNCATION_NAMES:
            trunc = _TRUNCATION_NAMES[truncation]
        else:
            raise ValueError("truncation must be True, False or one of 'longest_first', "
                             "'only_first', 'only_second', not %r" % (truncation,))
        if padding in (True, "longest"):
            pad = "longest"
        elif padding in (False, None, "do_not_pad"):
            pad = None
        elif padding == "max_length":
            pad = "max_length"
        else:
            raise ValueError("padding must be True/'longest', 'max_length' or False, not %r"
                             % (padding,))
        limit = max_length
        if limit is None and (trunc != Truncation.NONE or pad == "max_length"):
            limit = self.model_max_length
            if limit is None:
                raise ValueError("truncation or padding='max_length' needs max_length: the "
                                 "tokenizer has no model_max_length")
        limit = 0 if limit is None else _count(limit, "max_length")
        rows, mapping = [], []
        for i, first in enumerate(texts):
            spans = []
            if is_split_into_words:
                first, starts = _joined(first, "text")
                spans.append(starts)
            second = None
            if pairs is not None:
                second = pairs[i]
                if is_split_into_words:
                    second, starts = _joined(second, "text_pair")
                    spans.append(starts)
            a = _text(first, "text")
            handle = Handle()
            if second is None:
                if trunc == Truncation.ONLY_SECOND:
                    raise ValueError("truncation='only_second' needs text_pair")
                check(lib.ct_tokenizer_encode(
                    self._live(), a, len(a), int(bool(add_special_tokens)),
                    limit if trunc != Truncation.NONE else 0, _count(stride, "stride"), 0,
                    ctypes.byref(handle)))
            else:
                b = _text(second, "text_pair")
                check(lib.ct_tokenizer_encode_pair(
                    self._live(), a, len(a), b, len(b), trunc,
                    limit if trunc != Truncation.NONE else 0, _count(stride, "stride"), 0,
                    ctypes.byref(handle)))
            windows = _windows(handle)
            for w in windows if return_overflowing_tokens else windows[:1]:
                if spans:  # word ids index the caller's words
                    w["word_ids"] = [
                        None if s is None else
                        bisect.bisect_right(spans[s], w["offset_mapping"][k][0]) - 1
                        for k, s in enumerate(w["sequence_ids"])]
                rows.append(w)
                mapping.append(i)
        length = None
        if pad == "longest":
            length = max(len(r["input_ids"]) for r in rows)
        elif pad == "max_length":
            length = max(limit, max(len(r["input_ids"]) for r in rows))
        if length is not None and pad_to_multiple_of:
            m = _count(pad_to_multiple_of, "pad_to_multiple_of")
            length = (length + m - 1) // m * m
        if length is not None:
            _pad_rows(rows, length, lib.ct_tokenizer_special_id(self._live(), _SPECIAL["pad"]))
        keys = ["input_ids"]
        keys += ["token_type_ids"] if return_token_type_ids else []
        keys += ["attention_mask"] if return_attention_mask else []
        keys += ["special_tokens_mask"] if return_special_tokens_mask else []
        keys += ["offset_mapping"] if return_offsets_mapping else []
        data = {k: [r[k] for r in rows] for k in keys}
        if return_length:
            data["length"] = [len(r["input_ids"]) for r in rows]
        if return_overflowing_tokens:
            data["overflow_to_sample_mapping"] = mapping
        if return_tensors == "np":
            if _np is None:
                raise ImportError("return_tensors='np' needs numpy")
            if len({len(r["input_ids"]) for r in rows}) > 1:
                raise ValueError("rows of different lengths cannot make one array; pass "
                                 "padding=True")
            data = {k: _np.asarray(v, dtype=_np.int64) for k, v in data.items()}
        elif not batched and not return_overflowing_tokens:
            data = {k: v[0] for k, v in data.items()}
        return BatchEncoding(data, [r["word_ids"] for r in rows],
                             [r["sequence_ids"] for r in rows], batched)

    def encode_pair(self, question, context, max_length=384, stride=128,
                    truncation="only_second", padding="max_length"):
        """A pair as tokenizer(question, context, truncation="only_second",
        max_length=384, stride=128, return_overflowing_tokens=True,
        return_offsets_mapping=True, padding="max_length") gives it: a list
        of windows (dicts as encode's), each [CLS] question [SEP] part of
        the context [SEP], parts overlapping by `stride` tokens."""
        if truncation not in _TRUNCATION_NAMES and not isinstance(truncation, Truncation):
            raise ValueError("truncation must be one of %s, not %r"
                             % (", ".join(repr(k) for k in _TRUNCATION_NAMES), truncation))
        trunc = Truncation(truncation) if isinstance(truncation, Truncation) \
            else _TRUNCATION_NAMES[truncation]
        a, b = _text(question, "question"), _text(context, "context")
        handle = Handle()
        check(lib.ct_tokenizer_encode_pair(
            self._live(), a, len(a), b, len(b), trunc,
            0 if max_length is None else _count(max_length, "max_length"),
            _count(stride, "stride"), _padding(padding), ctypes.byref(handle)))
        return _windows(handle)
