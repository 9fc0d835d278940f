"""PyTorch reference for libcputrain's models: BERT and DistilBERT with the
question-answering, sequence-classification, masked-LM and
token-classification heads, written
from scratch in plain torch.nn with the semantics (and state-dict names) of
Hugging Face Transformers' modeling_bert.py and modeling_distilbert.py.

Also: a small safetensors reader/writer (numpy only; F32, BF16, F16 and the
integer types), config.json in both model types' keys, Hugging Face model
folders in and out, and run_batch(), which runs forward (+ backward) on one
batch in fp32, under PyTorch's CPU bf16 autocast, or in an emulation of the
library's bf16 matmuls, returning the loss, the logits and every parameter's
gradient by name.

    python3 tests/ref/torch_bert.py self-test       # gradcheck etc.
    python3 tests/ref/torch_bert.py run DIR [--task masked-lm] [--bf16]

Run with Debian's /usr/bin/python3 (python3-torch).
"""

import argparse
import contextlib
import json
import math
import os
import struct
import sys
from typing import Dict, NamedTuple, Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

TASKS = ("question-answering", "sequence-classification", "masked-lm", "token-classification")

# ---------------------------------------------------------------------------
# safetensors (the format: u64 LE header length N, N bytes of JSON
# {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}},
# then the data buffer; offsets are relative to the buffer)
# ---------------------------------------------------------------------------

# dtype -> (bytes per element, numpy dtype of the raw elements). BF16 has no
# numpy type: its raw elements are uint16, converted with bf16_to_f32.
ST_DTYPES = {
    "BOOL": (1, np.bool_), "U8": (1, np.uint8), "I8": (1, np.int8),
    "I16": (2, np.int16), "U16": (2, np.uint16), "F16": (2, np.float16),
    "BF16": (2, np.uint16), "I32": (4, np.int32), "U32": (4, np.uint32),
    "F32": (4, np.float32), "F64": (8, np.float64), "I64": (8, np.int64),
    "U64": (8, np.uint64),
}
# The reference implementation's dtype order (ascending alignment); its
# writer sorts tensors by dtype, descending, then by name.
ST_ORDER = ["BOOL", "U8", "I8", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64",
            "I64", "U64"]
ST_MAX_HEADER = 100_000_000


class SafetensorsError(ValueError):
    pass


def f32_to_bf16_bits(x):
    """float32 array -> uint16 bf16 bits, round to nearest even (NaN stays NaN)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)


def bf16_bits_to_f32(bits):
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def round_to_bf16(x):
    """The float32 values a bf16 round trip gives (RNE)."""
    return bf16_bits_to_f32(f32_to_bf16_bits(x)).reshape(np.shape(x))


class RawTensor(NamedTuple):
    dtype: str
    shape: tuple
    data: bytes


def read_safetensors_raw(path):
    """({name: RawTensor}, metadata dict or None), validated as the reference
    implementation validates (header size, JSON object, no duplicate names,
    known dtypes, sizes = shape x dtype, offsets contiguous from 0, buffer
    ending exactly at the end of the file)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise SafetensorsError("%s: shorter than the 8-byte header length" % path)
    (n,) = struct.unpack("<Q", blob[:8])
    if n > ST_MAX_HEADER:
        raise SafetensorsError("%s: header length %d exceeds %d" % (path, n, ST_MAX_HEADER))
    if 8 + n > len(blob):
        raise SafetensorsError("%s: header length %d runs past the end of the file" % (path, n))
    text = blob[8:8 + n].decode("utf-8")
    if not text.startswith("{"):
        raise SafetensorsError("%s: header does not start with '{'" % path)

    def no_duplicates(pairs):
        seen = {}
        for key, value in pairs:
            if key in seen:
                raise SafetensorsError("%s: duplicate key %r in the header" % (path, key))
            seen[key] = value
        return seen

    header = json.loads(text, object_pairs_hook=no_duplicates)
    if not isinstance(header, dict):
        raise SafetensorsError("%s: header is not a JSON object" % path)
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not (isinstance(metadata, dict)
                                     and all(isinstance(v, str) for v in metadata.values())):
        raise SafetensorsError("%s: __metadata__ must map strings to strings" % path)
    buffer = blob[8 + n:]
    entries = []
    for name, info in header.items():
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise SafetensorsError("%s: tensor %r: expected dtype, shape, data_offsets" % (path, name))
        dtype, shape, (begin, end) = info["dtype"], tuple(info["shape"]), info["data_offsets"]
        if dtype not in ST_DTYPES:
            raise SafetensorsError("%s: tensor %r: unknown dtype %r" % (path, name, dtype))
        nbytes = int(np.prod(shape, dtype=np.int64)) * ST_DTYPES[dtype][0]
        if end - begin != nbytes or begin > end:
            raise SafetensorsError("%s: tensor %r: %d bytes for shape %s x %s" % (
                path, name, end - begin, list(shape), dtype))
        entries.append((begin, end, name, dtype, shape))
    entries.sort()
    position = 0
    for begin, end, name, _, _ in entries:
        if begin != position:
            raise SafetensorsError("%s: tensor %r starts at %d, expected %d (gap or overlap)"
                                   % (path, name, begin, position))
        position = end
    if position != len(buffer):
        raise SafetensorsError("%s: data ends at %d but the buffer holds %d bytes"
                               % (path, position, len(buffer)))
    tensors = {name: RawTensor(dtype, shape, buffer[begin:end])
               for begin, end, name, dtype, shape in entries}
    return {name: tensors[name] for name in header}, metadata


def raw_to_numpy(raw):
    """A RawTensor's values: float32 for F32/BF16/F16, else the raw type."""
    size, np_type = ST_DTYPES[raw.dtype]
    array = np.frombuffer(raw.data, dtype=np.dtype(np_type).newbyteorder("<")).reshape(raw.shape)
    if raw.dtype == "BF16":
        return bf16_bits_to_f32(array).reshape(raw.shape)
    if raw.dtype == "F16":
        return array.astype(np.float32)
    return array.astype(array.dtype.newbyteorder("="))


def read_safetensors(path):
    """({name: numpy array}, metadata); floating tensors as float32."""
    raw, metadata = read_safetensors_raw(path)
    return {name: raw_to_numpy(t) for name, t in raw.items()}, metadata


def encode_tensor(array, dtype="F32"):
    """A numpy array as a RawTensor of `dtype` (F32, BF16, F16; or the raw
    type for integer arrays when dtype is None)."""
    array = np.asarray(array)
    if dtype is None:
        names = {np.dtype(t): n for n, (_, t) in ST_DTYPES.items() if n != "BF16"}
        dtype = names[array.dtype]
    if dtype == "BF16":
        data = f32_to_bf16_bits(array).astype("<u2").tobytes()
    else:
        little = np.dtype(ST_DTYPES[dtype][1]).newbyteorder("<")
        data = np.ascontiguousarray(array, dtype=little).tobytes()
    return RawTensor(dtype, tuple(int(d) for d in array.shape), data)


def write_safetensors(path, tensors, metadata=None, dtype="F32"):
    """Write {name: numpy array or RawTensor} the way the reference writer
    does: tensors sorted by dtype (descending alignment) then name, compact
    JSON header with __metadata__ first, padded with spaces to 8 bytes."""
    raw = {name: t if isinstance(t, RawTensor) else encode_tensor(t, dtype)
           for name, t in tensors.items()}
    order = sorted(raw, key=lambda name: (-ST_ORDER.index(raw[name].dtype), name))
    header = {}
    if metadata is not None:
        header["__metadata__"] = dict(metadata)
    offset = 0
    for name in order:
        t = raw[name]
        header[name] = {"dtype": t.dtype, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(t.data)]}
        offset += len(t.data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name in order:
            f.write(raw[name].data)


# ---------------------------------------------------------------------------
# configuration (config.json, BERT and DistilBERT keys)
# ---------------------------------------------------------------------------

class Config:
    """The hyper-parameters both model types share, under BERT's names;
    `source` keeps every key of the file it came from."""

    def __init__(self, model_type="bert", **kw):
        if model_type not in ("bert", "distilbert"):
            raise ValueError("model_type %r is not bert or distilbert" % model_type)
        bert = model_type == "bert"
        self.model_type = model_type
        self.vocab_size = 30522
        self.hidden_size = 768
        self.num_hidden_layers = 12 if bert else 6
        self.num_attention_heads = 12
        self.intermediate_size = 3072
        self.max_position_embeddings = 512
        self.type_vocab_size = 2 if bert else 0
        self.pad_token_id = 0
        self.num_labels = 2
        self.hidden_act = "gelu"
        # DistilBERT hard-codes 1e-12 in every LayerNorm.
        self.layer_norm_eps = 1e-12
        self.initializer_range = 0.02
        self.hidden_dropout_prob = 0.1
        self.attention_probs_dropout_prob = 0.1
        self.classifier_dropout = None          # BERT: None means hidden_dropout_prob
        self.qa_dropout = 0.1                   # DistilBERT only
        self.seq_classif_dropout = 0.2          # DistilBERT only
        self.sinusoidal_pos_embds = False       # DistilBERT only
        self.source = None
        for key, value in kw.items():
            if not hasattr(self, key):
                raise TypeError("unknown configuration key %r" % key)
            setattr(self, key, value)

    @property
    def head_size(self):
        return self.hidden_size // self.num_attention_heads

    @classmethod
    def from_dict(cls, d):
        model_type = d.get("model_type")
        if model_type == "bert":
            keys = {k: k for k in ("vocab_size", "hidden_size", "num_hidden_layers",
                                   "num_attention_heads", "intermediate_size",
                                   "max_position_embeddings", "type_vocab_size", "pad_token_id",
                                   "hidden_act", "layer_norm_eps", "initializer_range",
                                   "hidden_dropout_prob", "attention_probs_dropout_prob",
                                   "classifier_dropout")}
            if d.get("position_embedding_type", "absolute") != "absolute":
                raise ValueError("only absolute position embeddings are supported")
        elif model_type == "distilbert":
            keys = {"vocab_size": "vocab_size", "dim": "hidden_size", "n_layers": "num_hidden_layers",
                    "n_heads": "num_attention_heads", "hidden_dim": "intermediate_size",
                    "max_position_embeddings": "max_position_embeddings",
                    "pad_token_id": "pad_token_id", "activation": "hidden_act",
                    "initializer_range": "initializer_range", "dropout": "hidden_dropout_prob",
                    "attention_dropout": "attention_probs_dropout_prob",
                    "qa_dropout": "qa_dropout", "seq_classif_dropout": "seq_classif_dropout",
                    "sinusoidal_pos_embds": "sinusoidal_pos_embds"}
        else:
            raise ValueError("model_type %r is not supported (bert, distilbert)" % (model_type,))
        c = cls(model_type, **{ours: d[theirs] for theirs, ours in keys.items() if theirs in d})
        # PretrainedConfig: id2label, when present, decides num_labels.
        if d.get("id2label"):
            c.num_labels = len(d["id2label"])
        elif "num_labels" in d:
            c.num_labels = d["num_labels"]
        c.source = dict(d)
        return c

    @classmethod
    def from_json_file(cls, path):
        with open(path) as f:
            return cls.from_dict(json.load(f))

    @classmethod
    def named(cls, name):
        """The library's built-in configurations, by the same names."""
        sizes = {  # arch, V, C, L, NH, FF, P (lib/model/config.c)
            "bert-base-uncased": ("bert", 30522, 768, 12, 12, 3072, 512),
            "bert-large-uncased": ("bert", 30522, 1024, 24, 16, 4096, 512),
            "distilbert-base-uncased": ("distilbert", 30522, 768, 6, 12, 3072, 512),
            "bert-tiny": ("bert", 30522, 128, 2, 2, 512, 512),
            "bert-mini": ("bert", 30522, 256, 4, 4, 1024, 512),
            "bert-small": ("bert", 30522, 512, 4, 8, 2048, 512),
            "bert-test": ("bert", 128, 32, 2, 4, 64, 64),
            "distilbert-test": ("distilbert", 128, 32, 2, 4, 64, 64),
        }
        arch, V, C, L, NH, FF, P = sizes[name]
        return cls(arch, vocab_size=V, hidden_size=C, num_hidden_layers=L,
                   num_attention_heads=NH, intermediate_size=FF, max_position_embeddings=P)

    @classmethod
    def resolve(cls, config):
        """A Config from a Config, a built-in name, a config.json path or a folder."""
        if isinstance(config, Config):
            return config
        if isinstance(config, dict):
            return cls.from_dict(config)
        path = os.fspath(config)
        if os.path.isdir(path):
            path = os.path.join(path, "config.json")
        if os.path.exists(path):
            return cls.from_json_file(path)
        return cls.named(path)

    def to_dict(self, architecture=None):
        """config.json as Transformers writes it for this model type."""
        labels = {}
        if self.num_labels != 2:
            labels = {"id2label": {str(i): "LABEL_%d" % i for i in range(self.num_labels)},
                      "label2id": {"LABEL_%d" % i: i for i in range(self.num_labels)}}
        if self.model_type == "bert":
            d = {"attention_probs_dropout_prob": self.attention_probs_dropout_prob,
                 "classifier_dropout": self.classifier_dropout,
                 "hidden_act": self.hidden_act,
                 "hidden_dropout_prob": self.hidden_dropout_prob,
                 "hidden_size": self.hidden_size,
                 "initializer_range": self.initializer_range,
                 "intermediate_size": self.intermediate_size,
                 "layer_norm_eps": self.layer_norm_eps,
                 "max_position_embeddings": self.max_position_embeddings,
                 "model_type": "bert",
                 "num_attention_heads": self.num_attention_heads,
                 "num_hidden_layers": self.num_hidden_layers,
                 "pad_token_id": self.pad_token_id,
                 "position_embedding_type": "absolute",
                 "torch_dtype": "float32",
                 "type_vocab_size": self.type_vocab_size,
                 "vocab_size": self.vocab_size}
        else:
            d = {"activation": self.hidden_act,
                 "attention_dropout": self.attention_probs_dropout_prob,
                 "dim": self.hidden_size,
                 "dropout": self.hidden_dropout_prob,
                 "hidden_dim": self.intermediate_size,
                 "initializer_range": self.initializer_range,
                 "max_position_embeddings": self.max_position_embeddings,
                 "model_type": "distilbert",
                 "n_heads": self.num_attention_heads,
                 "n_layers": self.num_hidden_layers,
                 "pad_token_id": self.pad_token_id,
                 "qa_dropout": self.qa_dropout,
                 "seq_classif_dropout": self.seq_classif_dropout,
                 "sinusoidal_pos_embds": self.sinusoidal_pos_embds,
                 "tie_weights_": True,
                 "torch_dtype": "float32",
                 "vocab_size": self.vocab_size}
        d.update(labels)
        if architecture:
            d["architectures"] = [architecture]
        return dict(sorted(d.items()))

    def write_json(self, path, architecture=None):
        with open(path, "w") as f:
            json.dump(self.to_dict(architecture), f, indent=2, sort_keys=True)
            f.write("\n")


# ---------------------------------------------------------------------------
# numerics switches: fp32 (plain), bf16 emulation (the library's definition)
# ---------------------------------------------------------------------------

_BF16_EMULATION = False


@contextlib.contextmanager
def bf16_emulation(enabled=True):
    """Inside: every matrix product (Linear layers, attention scores,
    attention x values, and their backward products) takes its inputs rounded
    to bf16 (nearest even) and accumulates in the working dtype; everything
    else (LayerNorm, softmax, GELU, losses, bias gradients) stays as is. This
    is DESIGN.md's definition of the library's bf16 path, as opposed to
    torch.autocast, which also keeps the activations between ops in bf16."""
    global _BF16_EMULATION
    saved, _BF16_EMULATION = _BF16_EMULATION, enabled
    try:
        yield
    finally:
        _BF16_EMULATION = saved


def _bf(x):
    return x.to(torch.bfloat16).to(x.dtype)


class _BF16Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b):
        xb, wb = _bf(x), _bf(w)
        ctx.save_for_backward(xb, wb)
        ctx.has_bias = b is not None
        y = torch.matmul(xb, wb.t())
        return y + b if b is not None else y

    @staticmethod
    def backward(ctx, dy):
        xb, wb = ctx.saved_tensors
        dyb = _bf(dy)
        dx = torch.matmul(dyb, wb)
        dw = torch.matmul(dyb.reshape(-1, dyb.shape[-1]).t(), xb.reshape(-1, xb.shape[-1]))
        db = dy.reshape(-1, dy.shape[-1]).sum(0) if ctx.has_bias else None
        return dx, dw, db


class _BF16Matmul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ab, bb = _bf(a), _bf(b)
        ctx.save_for_backward(ab, bb)
        return torch.matmul(ab, bb)

    @staticmethod
    def backward(ctx, dy):
        ab, bb = ctx.saved_tensors
        dyb = _bf(dy)
        return torch.matmul(dyb, bb.transpose(-1, -2)), torch.matmul(ab.transpose(-1, -2), dyb)


def linear(x, weight, bias=None):
    if _BF16_EMULATION:
        return _BF16Linear.apply(x, weight, bias)
    return F.linear(x, weight, bias)


def matmul(a, b):
    if _BF16_EMULATION:
        return _BF16Matmul.apply(a, b)
    return torch.matmul(a, b)


class Linear(nn.Linear):
    """nn.Linear (same parameter names and init) through linear()."""

    def forward(self, x):
        return linear(x, self.weight, self.bias)


class LayerNorm(nn.LayerNorm):
    """nn.LayerNorm that also takes a bf16 input with fp32 weights, as
    PyTorch 2's CPU kernel does (computing in fp32, returning the input's
    dtype); PyTorch 1.13 refuses the mix, which autocast produces in the MLM
    heads (dense -> activation -> LayerNorm with no fp32 residual between)."""

    def forward(self, x):
        if x.dtype != self.weight.dtype:
            return F.layer_norm(x.to(self.weight.dtype), self.normalized_shape, self.weight,
                                self.bias, self.eps).to(x.dtype)
        return super().forward(x)


class NewGELU(nn.Module):
    """Transformers' gelu_new: the tanh approximation, written out."""

    def forward(self, x):
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
        return 0.5 * x * (1.0 + torch.tanh(inner))


class ExactGELU(nn.Module):
    def forward(self, x):
        return F.gelu(x)


class TanhGELU(nn.Module):
    def forward(self, x):
        return F.gelu(x, approximate="tanh")


def activation(name):
    table = {"gelu": ExactGELU, "gelu_new": NewGELU, "gelu_pytorch_tanh": TanhGELU, "relu": nn.ReLU}
    if name not in table:
        raise ValueError("activation %r is not supported (%s)" % (name, ", ".join(table)))
    return table[name]()


# ---------------------------------------------------------------------------
# BERT (modeling_bert.py)
# ---------------------------------------------------------------------------

class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size, padding_idx=c.pad_token_id)
        self.position_embeddings = nn.Embedding(c.max_position_embeddings, c.hidden_size)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size)
        self.LayerNorm = LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids):
        T = input_ids.shape[1]
        positions = torch.arange(T, device=input_ids.device).unsqueeze(0)
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        x = x + self.position_embeddings(positions)
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.num_heads, self.head_size = c.num_attention_heads, c.head_size
        self.query = Linear(c.hidden_size, c.hidden_size)
        self.key = Linear(c.hidden_size, c.hidden_size)
        self.value = Linear(c.hidden_size, c.hidden_size)
        self.dropout = nn.Dropout(c.attention_probs_dropout_prob)

    def split(self, x):
        B, T, _ = x.shape
        return x.view(B, T, self.num_heads, self.head_size).permute(0, 2, 1, 3)

    def forward(self, h, extended_mask):
        q, k, v = self.split(self.query(h)), self.split(self.key(h)), self.split(self.value(h))
        scores = matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size)
        scores = scores + extended_mask
        probs = self.dropout(F.softmax(scores, dim=-1))
        ctx = matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.shape[0], ctx.shape[1], -1)


class BertSelfOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = Linear(c.hidden_size, c.hidden_size)
        self.LayerNorm = LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, h, residual):
        return self.LayerNorm(self.dropout(self.dense(h)) + residual)


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = BertSelfAttention(c)
        self.output = BertSelfOutput(c)

    def forward(self, h, extended_mask):
        return self.output(self.self(h, extended_mask), h)


class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = Linear(c.hidden_size, c.intermediate_size)
        self.intermediate_act_fn = activation(c.hidden_act)

    def forward(self, h):
        return self.intermediate_act_fn(self.dense(h))


class BertOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = Linear(c.intermediate_size, c.hidden_size)
        self.LayerNorm = LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, h, residual):
        return self.LayerNorm(self.dropout(self.dense(h)) + residual)


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = BertOutput(c)

    def forward(self, h, extended_mask):
        a = self.attention(h, extended_mask)
        return self.output(self.intermediate(a), a)


class BertEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(c) for _ in range(c.num_hidden_layers)])

    def forward(self, h, extended_mask):
        for layer in self.layer:
            h = layer(h, extended_mask)
        return h


class BertPooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = Linear(c.hidden_size, c.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, h):
        return self.activation(self.dense(h[:, 0]))


class BertModel(nn.Module):
    def __init__(self, c, add_pooling_layer=True):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.encoder = BertEncoder(c)
        self.pooler = BertPooler(c) if add_pooling_layer else None

    def forward(self, input_ids, token_type_ids=None, attention_mask=None):
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        # get_extended_attention_mask: (1 - mask) * finfo(dtype).min, added
        # to the scores, in the parameters' dtype (fp32 even under autocast).
        dtype = self.embeddings.LayerNorm.weight.dtype
        extended = attention_mask[:, None, None, :].to(dtype)
        extended = (1.0 - extended) * torch.finfo(dtype).min
        h = self.encoder(self.embeddings(input_ids, token_type_ids), extended)
        return h, (self.pooler(h) if self.pooler is not None else None)


# ---------------------------------------------------------------------------
# DistilBERT (modeling_distilbert.py)
# ---------------------------------------------------------------------------

def sinusoidal_table(n_pos, dim):
    """create_sinusoidal_embeddings, computed as Transformers does (numpy
    float64, then float32)."""
    enc = np.array([[pos / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)]
                    for pos in range(n_pos)])
    out = np.zeros((n_pos, dim), dtype=np.float32)
    out[:, 0::2] = np.sin(enc[:, 0::2])
    out[:, 1::2] = np.cos(enc[:, 1::2])
    return out


class DistilEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size, padding_idx=c.pad_token_id)
        self.position_embeddings = nn.Embedding(c.max_position_embeddings, c.hidden_size)
        if c.sinusoidal_pos_embds:
            with torch.no_grad():
                self.position_embeddings.weight.copy_(
                    torch.from_numpy(sinusoidal_table(c.max_position_embeddings, c.hidden_size)))
            self.position_embeddings.weight.requires_grad = False
        self.LayerNorm = LayerNorm(c.hidden_size, eps=1e-12)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        x = self.word_embeddings(input_ids) + self.position_embeddings(positions)
        return self.dropout(self.LayerNorm(x))


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_heads, self.head_size = c.num_attention_heads, c.head_size
        self.dropout = nn.Dropout(p=c.attention_probs_dropout_prob)
        self.q_lin = Linear(c.hidden_size, c.hidden_size)
        self.k_lin = Linear(c.hidden_size, c.hidden_size)
        self.v_lin = Linear(c.hidden_size, c.hidden_size)
        self.out_lin = Linear(c.hidden_size, c.hidden_size)

    def forward(self, x, mask):
        B, T, _ = x.shape

        def shape(y):
            return y.view(B, -1, self.n_heads, self.head_size).transpose(1, 2)

        q = shape(self.q_lin(x)) / math.sqrt(self.head_size)  # scaled before the product
        k, v = shape(self.k_lin(x)), shape(self.v_lin(x))
        scores = matmul(q, k.transpose(2, 3))
        # masked_fill with the dtype's minimum (not an additive mask)
        masked = (mask == 0).view(B, 1, 1, T).expand_as(scores)
        scores = scores.masked_fill(masked, torch.tensor(torch.finfo(scores.dtype).min))
        weights = self.dropout(F.softmax(scores, dim=-1))
        context = matmul(weights, v).transpose(1, 2).contiguous()
        context = context.view(B, -1, self.n_heads * self.head_size)
        return self.out_lin(context)


class FFN(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dropout = nn.Dropout(p=c.hidden_dropout_prob)
        self.lin1 = Linear(c.hidden_size, c.intermediate_size)
        self.lin2 = Linear(c.intermediate_size, c.hidden_size)
        self.activation = activation(c.hidden_act)

    def forward(self, x):
        return self.dropout(self.lin2(self.activation(self.lin1(x))))


class TransformerBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = MultiHeadSelfAttention(c)
        self.sa_layer_norm = LayerNorm(c.hidden_size, eps=1e-12)
        self.ffn = FFN(c)
        self.output_layer_norm = LayerNorm(c.hidden_size, eps=1e-12)

    def forward(self, x, mask):
        sa = self.sa_layer_norm(self.attention(x, mask) + x)
        return self.output_layer_norm(self.ffn(sa) + sa)


class Transformer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([TransformerBlock(c) for _ in range(c.num_hidden_layers)])

    def forward(self, x, mask):
        for layer in self.layer:
            x = layer(x, mask)
        return x


class DistilBertModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = DistilEmbeddings(c)
        self.transformer = Transformer(c)

    def forward(self, input_ids, attention_mask=None):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        return self.transformer(self.embeddings(input_ids), attention_mask)


# ---------------------------------------------------------------------------
# heads (forward returns (loss or None, logits); QA logits are [B, T, 2] =
# (start, end), the layout of qa_outputs' output before the split)
# ---------------------------------------------------------------------------

def qa_loss(logits, start_positions, end_positions, attention_mask=None):
    """BertForQuestionAnswering's loss: positions clamped to [0, T], T
    ignored, the mean of the start and end cross-entropies.

    One difference, the library's: positions the attention mask excludes
    are not candidates (their logits are -inf here). Transformers scores
    padding positions too; the library never computes them (it runs the
    real tokens only), so it cannot, and an answer is never padding."""
    start_logits, end_logits = (t.squeeze(-1).contiguous() for t in logits.split(1, dim=-1))
    if attention_mask is not None:
        pad = attention_mask == 0
        start_logits = start_logits.masked_fill(pad, float("-inf"))
        end_logits = end_logits.masked_fill(pad, float("-inf"))
    ignored = start_logits.size(1)
    start = start_positions.clamp(0, ignored)
    end = end_positions.clamp(0, ignored)
    ce = nn.CrossEntropyLoss(ignore_index=ignored)
    return (ce(start_logits, start) + ce(end_logits, end)) / 2


def classification_loss(logits, labels, config):
    """BertForSequenceClassification's loss: config.json's problem_type, or
    the one it infers (num_labels 1 regression, integer labels single-label,
    else multi-label)."""
    num_labels = config.num_labels
    problem = (config.source or {}).get("problem_type")
    if problem is None:
        problem = ("regression" if num_labels == 1 else "single_label_classification"
                   if labels.dtype in (torch.long, torch.int) else "multi_label_classification")
    if problem == "regression":
        if num_labels == 1:
            return nn.MSELoss()(logits.squeeze(), labels.squeeze().to(logits.dtype))
        return nn.MSELoss()(logits, labels.to(logits.dtype))
    if problem == "single_label_classification":
        return nn.CrossEntropyLoss()(logits.view(-1, num_labels), labels.view(-1))
    return nn.BCEWithLogitsLoss()(logits, labels.to(logits.dtype))


def token_loss(logits, labels):
    """Masked LM and token classification: cross-entropy per token, -100 ignored."""
    return nn.CrossEntropyLoss()(logits.view(-1, logits.size(-1)), labels.view(-1))


class _Head(nn.Module):
    """Common to the eight heads: HF initialisation, the task's loss."""
    base_prefix = None

    def __init__(self, c):
        super().__init__()
        self.config = c

    @property
    def architecture(self):
        return type(self).__name__

    def init_weights(self):
        """PreTrainedModel._init_weights on every module (normal(0, range)
        Linear/Embedding weights, zero biases and padding row, LayerNorm 1/0)."""
        r = self.config.initializer_range
        for m in self.modules():
            if isinstance(m, nn.Linear):
                m.weight.data.normal_(0.0, r)
                if m.bias is not None:
                    m.bias.data.zero_()
            elif isinstance(m, nn.Embedding):
                if m.weight.requires_grad:  # not the sinusoidal table
                    m.weight.data.normal_(0.0, r)
                    if m.padding_idx is not None:
                        m.weight.data[m.padding_idx].zero_()
            elif isinstance(m, nn.LayerNorm):
                m.weight.data.fill_(1.0)
                m.bias.data.zero_()


class BertForQuestionAnswering(_Head):
    base_prefix = "bert"

    def __init__(self, c):
        super().__init__(c)
        self.bert = BertModel(c, add_pooling_layer=False)
        self.qa_outputs = Linear(c.hidden_size, 2)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None,
                start_positions=None, end_positions=None, labels=None):
        h, _ = self.bert(input_ids, token_type_ids, attention_mask)
        logits = self.qa_outputs(h)
        loss = None
        if start_positions is not None and end_positions is not None:
            loss = qa_loss(logits, start_positions, end_positions, attention_mask)
        return loss, logits


class BertForSequenceClassification(_Head):
    base_prefix = "bert"

    def __init__(self, c):
        super().__init__(c)
        self.bert = BertModel(c, add_pooling_layer=True)
        p = c.classifier_dropout if c.classifier_dropout is not None else c.hidden_dropout_prob
        self.dropout = nn.Dropout(p)
        self.classifier = Linear(c.hidden_size, c.num_labels)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None,
                start_positions=None, end_positions=None, labels=None):
        _, pooled = self.bert(input_ids, token_type_ids, attention_mask)
        logits = self.classifier(self.dropout(pooled))
        if labels is None:
            return None, logits
        return classification_loss(logits, labels, self.config), logits


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = Linear(c.hidden_size, c.hidden_size)
        self.transform_act_fn = activation(c.hidden_act)
        self.LayerNorm = LayerNorm(c.hidden_size, eps=c.layer_norm_eps)

    def forward(self, h):
        return self.LayerNorm(self.transform_act_fn(self.dense(h)))


class BertLMPredictionHead(nn.Module):
    """The decoder is word_embeddings.weight (tied) plus this bias; neither
    is a separate parameter (Transformers' decoder.weight/decoder.bias are
    the same tensors and are not saved)."""

    def __init__(self, c, word_embeddings):
        super().__init__()
        self.transform = BertPredictionHeadTransform(c)
        self.bias = nn.Parameter(torch.zeros(c.vocab_size))
        self._tied = [word_embeddings]  # a list: not registered twice

    def forward(self, h):
        return linear(self.transform(h), self._tied[0].weight, self.bias)


class BertOnlyMLMHead(nn.Module):
    def __init__(self, c, word_embeddings):
        super().__init__()
        self.predictions = BertLMPredictionHead(c, word_embeddings)

    def forward(self, h):
        return self.predictions(h)


class BertForMaskedLM(_Head):
    base_prefix = "bert"

    def __init__(self, c):
        super().__init__(c)
        self.bert = BertModel(c, add_pooling_layer=False)
        self.cls = BertOnlyMLMHead(c, self.bert.embeddings.word_embeddings)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None,
                start_positions=None, end_positions=None, labels=None):
        h, _ = self.bert(input_ids, token_type_ids, attention_mask)
        logits = self.cls(h)
        return (token_loss(logits, labels) if labels is not None else None), logits


class BertForTokenClassification(_Head):
    base_prefix = "bert"

    def __init__(self, c):
        super().__init__(c)
        self.bert = BertModel(c, add_pooling_layer=False)
        p = c.classifier_dropout if c.classifier_dropout is not None else c.hidden_dropout_prob
        self.dropout = nn.Dropout(p)
        self.classifier = Linear(c.hidden_size, c.num_labels)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None,
                start_positions=None, end_positions=None, labels=None):
        h, _ = self.bert(input_ids, token_type_ids, attention_mask)
        logits = self.classifier(self.dropout(h))
        return (token_loss(logits, labels) if labels is not None else None), logits


class DistilBertForQuestionAnswering(_Head):
    base_prefix = "distilbert"

    def __init__(self, c):
        super().__init__(c)
        self.distilbert = DistilBertModel(c)
        self.qa_outputs = Linear(c.hidden_size, 2)
        self.dropout = nn.Dropout(c.qa_dropout)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None,
                start_positions=None, end_positions=None, labels=None):
        h = self.dropout(self.distilbert(input_ids, attention_mask))  # token_type_ids unused
        logits = self.qa_outputs(h)
        loss = None
        if start_positions is not None and end_positions is not None:
            loss = qa_loss(logits, start_positions, end_positions, attention_mask)
        return loss, logits


class DistilBertForSequenceClassification(_Head):
    base_prefix = "distilbert"

    def __init__(self, c):
        super().__init__(c)
        self.distilbert = DistilBertModel(c)
        self.pre_classifier = Linear(c.hidden_size, c.hidden_size)
        self.classifier = Linear(c.hidden_size, c.num_labels)
        self.dropout = nn.Dropout(c.seq_classif_dropout)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None,
                start_positions=None, end_positions=None, labels=None):
        h = self.distilbert(input_ids, attention_mask)
        pooled = self.dropout(F.relu(self.pre_classifier(h[:, 0])))
        logits = self.classifier(pooled)
        if labels is None:
            return None, logits
        return classification_loss(logits, labels, self.config), logits


class TiedProjector(nn.Module):
    """vocab_projector: weight tied to word_embeddings, own bias."""

    def __init__(self, c, word_embeddings):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(c.vocab_size))
        self._tied = [word_embeddings]

    def forward(self, h):
        return linear(h, self._tied[0].weight, self.bias)


class DistilBertForMaskedLM(_Head):
    base_prefix = "distilbert"

    def __init__(self, c):
        super().__init__(c)
        self.activation = activation(c.hidden_act)
        self.distilbert = DistilBertModel(c)
        self.vocab_transform = Linear(c.hidden_size, c.hidden_size)
        self.vocab_layer_norm = LayerNorm(c.hidden_size, eps=1e-12)
        self.vocab_projector = TiedProjector(c, self.distilbert.embeddings.word_embeddings)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None,
                start_positions=None, end_positions=None, labels=None):
        h = self.distilbert(input_ids, attention_mask)
        logits = self.vocab_projector(self.vocab_layer_norm(self.activation(self.vocab_transform(h))))
        return (token_loss(logits, labels) if labels is not None else None), logits


class DistilBertForTokenClassification(_Head):
    base_prefix = "distilbert"

    def __init__(self, c):
        super().__init__(c)
        self.distilbert = DistilBertModel(c)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)  # DistilBERT's "dropout"
        self.classifier = Linear(c.hidden_size, c.num_labels)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None,
                start_positions=None, end_positions=None, labels=None):
        h = self.distilbert(input_ids, attention_mask)
        logits = self.classifier(self.dropout(h))
        return (token_loss(logits, labels) if labels is not None else None), logits


HEADS = {
    ("bert", "question-answering"): BertForQuestionAnswering,
    ("bert", "sequence-classification"): BertForSequenceClassification,
    ("bert", "masked-lm"): BertForMaskedLM,
    ("bert", "token-classification"): BertForTokenClassification,
    ("distilbert", "question-answering"): DistilBertForQuestionAnswering,
    ("distilbert", "sequence-classification"): DistilBertForSequenceClassification,
    ("distilbert", "masked-lm"): DistilBertForMaskedLM,
    ("distilbert", "token-classification"): DistilBertForTokenClassification,
}


def build_model(config, task="question-answering", seed=None, dtype=torch.float32):
    """A model for `config` (Config, built-in name, config.json or folder)
    and `task`, with Hugging Face's initialisation drawn from torch's
    generator seeded with `seed` (unless None), in eval mode."""
    c = Config.resolve(config)
    if task not in TASKS:
        raise ValueError("task %r is not one of %s" % (task, ", ".join(TASKS)))
    model = HEADS[c.model_type, task](c)
    if seed is not None:
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            model.init_weights()
    else:
        model.init_weights()
    model.task = task
    return model.to(dtype).eval()


def num_parameters(model):
    """Every parameter scalar, tied weights once (frozen ones included, as
    PreTrainedModel.num_parameters() counts them)."""
    return sum(p.numel() for p in model.parameters())


# ---------------------------------------------------------------------------
# Hugging Face folders
# ---------------------------------------------------------------------------

def _checkpoint_tensors(folder):
    """Every tensor of a folder's model.safetensors, or of the shards its
    model.safetensors.index.json lists."""
    single = os.path.join(folder, "model.safetensors")
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(single):
        return read_safetensors(single)[0]
    with open(index) as f:
        weight_map = json.load(f)["weight_map"]
    tensors = {}
    for shard in sorted(set(weight_map.values())):
        tensors.update(read_safetensors(os.path.join(folder, shard))[0])
    return tensors


def load_pretrained(folder, task=None, seed=0, dtype=torch.float32):
    """(model, missing names) from a Hugging Face folder, as from_pretrained
    loads one: names with or without the "bert."/"distilbert." prefix,
    LayerNorm gamma/beta renamed, tensors of other heads ignored, missing
    ones left as initialised from `seed`. `task` None takes the head from
    config.json's "architectures"."""
    c = Config.from_json_file(os.path.join(folder, "config.json"))
    if task is None:
        arch = (c.source or {}).get("architectures", [""])[0]
        task = {"ForQuestionAnswering": "question-answering",
                "ForSequenceClassification": "sequence-classification",
                "ForMaskedLM": "masked-lm",
                "ForTokenClassification": "token-classification"}.get(arch[arch.find("For"):],
                                                                      "question-answering")
    model = build_model(c, task, seed=seed)
    tensors = {}
    for name, array in _checkpoint_tensors(folder).items():
        name = name.replace("LayerNorm.gamma", "LayerNorm.weight")
        name = name.replace("LayerNorm.beta", "LayerNorm.bias")
        tensors[name] = array
    prefix = model.base_prefix + "."
    missing = []
    with torch.no_grad():
        for name, p in model.named_parameters():
            array = tensors.get(name)
            if array is None and name.startswith(prefix):
                array = tensors.get(name[len(prefix):])
            if array is None:
                missing.append(name)
                continue
            if tuple(array.shape) != tuple(p.shape):
                raise ValueError("%s: %s has shape %s, the model wants %s"
                                 % (folder, name, list(array.shape), list(p.shape)))
            p.copy_(torch.from_numpy(np.array(array, dtype=np.float32)))
    return model.to(dtype).eval(), missing


def state_dict_numpy(model):
    """{name: float32 numpy copy} of every parameter, in state-dict order."""
    return {name: p.detach().to(torch.float32).cpu().numpy().copy()
            for name, p in model.named_parameters()}


def save_pretrained(model, folder, dtype="F32", shards=1, drop_prefix=False):
    """config.json (with "architectures") and model.safetensors (or `shards`
    files and model.safetensors.index.json), as save_pretrained writes them:
    tied decoder weights left out, {"format": "pt"} metadata."""
    os.makedirs(folder, exist_ok=True)
    model.config.write_json(os.path.join(folder, "config.json"), model.architecture)
    tensors = state_dict_numpy(model)
    if drop_prefix:
        prefix = model.base_prefix + "."
        tensors = {n[len(prefix):] if n.startswith(prefix) else n: t for n, t in tensors.items()}
    if shards <= 1:
        write_safetensors(os.path.join(folder, "model.safetensors"), tensors, {"format": "pt"}, dtype)
        return
    names = list(tensors)
    per = -(-len(names) // shards)
    weight_map, total = {}, 0
    for i in range(shards):
        part = names[i * per:(i + 1) * per]
        file = "model-%05d-of-%05d.safetensors" % (i + 1, shards)
        write_safetensors(os.path.join(folder, file), {n: tensors[n] for n in part},
                          {"format": "pt"}, dtype)
        for n in part:
            weight_map[n] = file
            total += tensors[n].size * (4 if dtype == "F32" else 2)
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)


# ---------------------------------------------------------------------------
# running a batch
# ---------------------------------------------------------------------------

PRECISIONS = ("fp32", "bf16-autocast", "bf16-emulated")


class Result(NamedTuple):
    loss: Optional[float]
    logits: np.ndarray             # float32 (float64 for a float64 model)
    grads: Dict[str, np.ndarray]   # every parameter by name (zeros when frozen)


def _tensor(x, dtype=torch.long):
    return None if x is None else torch.as_tensor(np.asarray(x)).to(dtype)


def run_batch(model, input_ids, token_type_ids=None, attention_mask=None,
              start_positions=None, end_positions=None, labels=None,
              precision="fp32", backward=True, loss_scale=1.0):
    """Forward (and, with backward, the gradient of loss * loss_scale) on one
    batch. precision: "fp32" (the model's own dtype), "bf16-autocast"
    (torch.autocast("cpu", dtype=torch.bfloat16), what Transformers' Trainer
    does with --bf16 on CPU) or "bf16-emulated" (see bf16_emulation).
    Labels are integers, except float regression targets for a
    classification head with num_labels 1."""
    if precision not in PRECISIONS:
        raise ValueError("precision %r is not one of %s" % (precision, PRECISIONS))
    model.zero_grad(set_to_none=True)
    if labels is not None:
        regression = np.asarray(labels).dtype.kind == "f"
        labels = _tensor(labels, torch.float32 if regression else torch.long)
    inputs = dict(input_ids=_tensor(input_ids), token_type_ids=_tensor(token_type_ids),
                  attention_mask=_tensor(attention_mask), start_positions=_tensor(start_positions),
                  end_positions=_tensor(end_positions), labels=labels)
    if precision == "bf16-autocast":
        ctx = torch.autocast("cpu", dtype=torch.bfloat16)
    elif precision == "bf16-emulated":
        ctx = bf16_emulation()
    else:
        ctx = contextlib.nullcontext()
    with torch.set_grad_enabled(backward), ctx:
        loss, logits = model(**inputs)
    if backward:
        if loss is None:
            raise ValueError("backward needs labels for the %s head" % model.task)
        (loss * loss_scale).backward()
    out_dtype = torch.float64 if logits.dtype == torch.float64 else torch.float32
    grads = {}
    for name, p in model.named_parameters():
        g = p.grad if backward else None
        grads[name] = (g.detach().to(out_dtype).numpy().copy() if g is not None
                       else np.zeros(tuple(p.shape), dtype=np.float64 if out_dtype == torch.float64
                                     else np.float32))
    logits = logits.detach().to(out_dtype).numpy().copy()
    if attention_mask is not None and logits.ndim == 3:
        # the library computes only the positions the mask keeps and reads 0
        # elsewhere
        logits[np.asarray(attention_mask) == 0] = 0
    return Result(None if loss is None else float(loss), logits, grads)


def example_batch(config, batch_size=3, seq_len=12, seed=0, task=None, pad_rows=(0, 4, 7)):
    """A batch like a tokenizer's: [CLS]-like first token, two segments
    (token_type_ids 0 then 1), padding at the end of some rows (attention
    mask 0, pad_token_id, token type 0), and labels for every head. Row i
    has pad_rows[i % len] padding positions."""
    c = Config.resolve(config)
    rng = np.random.default_rng(seed)
    B, T = batch_size, seq_len
    ids = rng.integers(0, c.vocab_size, size=(B, T)).astype(np.int32)
    ids[ids == c.pad_token_id] = (c.pad_token_id + 1) % c.vocab_size
    mask = np.ones((B, T), dtype=np.int32)
    types = np.zeros((B, T), dtype=np.int32)
    lengths = []
    for b in range(B):
        n = max(1, T - pad_rows[b % len(pad_rows)])
        lengths.append(n)
        mask[b, n:] = 0
        ids[b, n:] = c.pad_token_id
        types[b, n // 2:n] = 1 if c.type_vocab_size != 1 else 0
    start = np.array([rng.integers(1, n) if n > 1 else 0 for n in lengths], dtype=np.int32)
    end = np.array([min(s + rng.integers(0, 3), n - 1) for s, n in zip(start, lengths)], dtype=np.int32)
    mlm = np.full((B, T), -100, dtype=np.int32)
    for b, n in enumerate(lengths):
        chosen = rng.choice(np.arange(1, n) if n > 1 else np.arange(1), size=max(1, (n - 1) // 3),
                            replace=False)
        mlm[b, chosen] = rng.integers(0, c.vocab_size, size=len(chosen))
    problem = (c.source or {}).get("problem_type")
    if c.num_labels == 1:
        cls = rng.normal(size=B).astype(np.float32)
    else:
        cls = rng.integers(0, c.num_labels, size=B).astype(np.int32)
    # Token classification as run_ner labels: a class per word, -100 on
    # [CLS], on padding and on the sub-tokens after a word's first (every
    # fifth position here). Drawn last, so the other heads' batches stay.
    tags = rng.integers(0, max(c.num_labels, 2), size=(B, T)).astype(np.int32)
    tags[:, 0] = -100
    tags[:, 3::5] = -100
    tags[mask == 0] = -100
    batch = dict(input_ids=ids, token_type_ids=types, attention_mask=mask)
    if task == "question-answering":
        batch.update(start_positions=start, end_positions=end)
    elif task == "sequence-classification":
        if problem == "multi_label_classification":  # multi-hot rows, drawn last
            cls = (rng.random((B, c.num_labels)) < 0.4).astype(np.float32)
        elif problem == "regression" and c.num_labels > 1:
            cls = rng.normal(size=(B, c.num_labels)).astype(np.float32)
        batch.update(labels=cls)
    elif task == "masked-lm":
        batch.update(labels=mlm)
    elif task == "token-classification":
        batch.update(labels=tags)
    return batch


# ---------------------------------------------------------------------------
# self-test and command line
# ---------------------------------------------------------------------------

def gradcheck_config(model_type, act="gelu", num_labels=2, sinusoidal=False):
    """A very small float64 config for torch.autograd.gradcheck."""
    if model_type == "bert":
        return Config("bert", vocab_size=11, hidden_size=8, num_hidden_layers=2,
                      num_attention_heads=2, intermediate_size=12, max_position_embeddings=8,
                      type_vocab_size=2, hidden_act=act, num_labels=num_labels, layer_norm_eps=1e-5)
    return Config("distilbert", vocab_size=11, hidden_size=8, num_hidden_layers=2,
                  num_attention_heads=2, intermediate_size=12, max_position_embeddings=8,
                  hidden_act=act, num_labels=num_labels, sinusoidal_pos_embds=sinusoidal)


def gradcheck_model(model_type, task, act="gelu", num_labels=2, sinusoidal=False, seed=0,
                    fast=False):
    """torch.autograd.gradcheck of the loss with respect to every trainable
    parameter, in float64, on a padded batch. Weights are drawn with std 0.5
    (not 0.02) so that every path contributes visibly."""
    from torch.nn.utils import stateless
    c = gradcheck_config(model_type, act, num_labels, sinusoidal)
    model = build_model(c, task, seed=seed, dtype=torch.float64)
    with torch.no_grad(), torch.random.fork_rng():
        torch.manual_seed(seed + 1)
        for p in model.parameters():
            if p.requires_grad:
                p.normal_(0.0, 0.5)
    batch = example_batch(c, batch_size=2, seq_len=6, seed=seed, task=task, pad_rows=(0, 2))
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    current = dict(model.named_parameters())
    # nn.Embedding(padding_idx=pad) gives the padding row no gradient from
    # the lookup, although the row is used: that is Transformers' semantics,
    # not a function derivative, so the row is held constant here.
    word = model.base_prefix + ".embeddings.word_embeddings.weight"
    pad = c.pad_token_id
    pad_row = current[word].detach()[pad:pad + 1].clone()
    params = tuple((torch.cat([current[n][:pad], current[n][pad + 1:]]) if n == word else current[n])
                   .detach().clone().requires_grad_(True) for n in names)
    inputs = {k: _tensor(v, torch.float64 if np.asarray(v).dtype.kind == "f" else torch.long)
              for k, v in batch.items()}

    def loss_of(*values):
        values = [torch.cat([v[:pad], pad_row, v[pad:]]) if n == word else v
                  for n, v in zip(names, values)]
        loss, _ = stateless.functional_call(model, dict(zip(names, values)), (), inputs)
        return loss

    return torch.autograd.gradcheck(loss_of, params, eps=1e-6, atol=1e-7, rtol=1e-5, fast_mode=fast)


def self_test(verbose=True):
    """Checks of the reference on its own; raises AssertionError."""
    def say(*a):
        if verbose:
            print(*a, flush=True)

    # bert-base-uncased with the QA head, as the library states it.
    count = num_parameters(HEADS["bert", "question-answering"](Config.named("bert-base-uncased")))
    say("bert-base-uncased QA parameters:", count)
    assert count == 108_893_186, count
    distil = Config.named("distilbert-base-uncased")
    count = num_parameters(HEADS["distilbert", "question-answering"](distil))
    say("distilbert-base-uncased QA parameters:", count)
    assert count == 66_364_418, count

    for model_type in ("bert", "distilbert"):
        for task in TASKS:
            for act, num_labels, sinusoidal in (("gelu", 2, False), ("gelu_new", 3, True),
                                                ("relu", 1, False)):
                if task in ("question-answering", "masked-lm") and num_labels != 2:
                    num_labels = 2
                if task == "token-classification" and num_labels == 1:
                    num_labels = 3  # a class per token: no regression
                sinusoidal = sinusoidal and model_type == "distilbert"
                ok = gradcheck_model(model_type, task, act, num_labels, sinusoidal)
                say("gradcheck %-10s %-24s %-8s num_labels=%d: %s"
                    % (model_type, task, act, num_labels, ok))
                assert ok
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("self-test", help="gradcheck and parameter counts")
    run = sub.add_parser("run", help="forward/backward on an example batch of a folder's model")
    run.add_argument("folder")
    run.add_argument("--task", default=None, choices=TASKS)
    run.add_argument("--precision", default="fp32", choices=PRECISIONS)
    args = parser.parse_args(argv)
    if args.command == "self-test":
        self_test()
        print("self-test: ok")
        return 0
    model, missing = load_pretrained(args.folder, args.task)
    if missing:
        print("initialised (not in the folder):", ", ".join(missing))
    batch = example_batch(model.config, task=model.task)
    r = run_batch(model, precision=args.precision, **batch)
    print("%s %s loss %.8g logits %s"
          % (model.architecture, args.precision, r.loss, list(r.logits.shape)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
