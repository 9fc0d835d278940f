"""Tokenizer: the library's BERT WordPiece tokenizer (ct_tokenizer), with
the tokens, offsets and overflow windows of Transformers' BertTokenizerFast.

    tok = Tokenizer.from_folder("bert-base-uncased")    # vocab.txt + tokenizer_config.json
    tok.encode("Hello, world!")["input_ids"]            # [101, 7592, 1010, 2088, 999, 102]
    windows = tok.encode_pair(question, context, max_length=384, stride=128)
    windows[0]["offset_mapping"], windows[0]["sequence_ids"]
    tok.save("out")     # vocab.txt, tokenizer_config.json, special_tokens_map.json, tokenizer.json

Offsets count characters (code points) of the Python str, as Transformers'
offset_mapping does: text[start:end] is the token's span."""

import ctypes
import enum
import numbers
import os

from ._errors import check
from ._handle import OwnedHandle
from ._lib import Handle, lib


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
