"""pytorch_model.bin without PyTorch: folders whose weights torch.save wrote
(Debian's python3-torch, the independent writer) load to the same tensors as
the safetensors form, in F32, F16 and BF16, with strided views, shared
storages, nn.Parameter values, pickle protocol 4 and the sharded index; the
legacy format and everything a state dict does not hold are refused by
name, and a pickle that would run a command runs nothing.

Tests that need PyTorch skip (saying why) only when `import torch` fails.
"""

import collections
import io
import json
import os
import pickle
import shutil
import struct
import tempfile
import unittest
import zipfile

import numpy as np

from cputrain import CputrainError, Model

try:
    import torch
    TORCH_MISSING = None
except ImportError as e:  # pragma: no cover - Debian's python3-torch is a test dependency
    torch = None
    TORCH_MISSING = "`import torch` failed (%s)" % e


def state_dict(model):
    """The model's tensors as torch tensors, by Transformers' names."""
    return collections.OrderedDict((k, torch.from_numpy(np.array(v)))
                                   for k, v in model.parameters().items())


def as_f32(model):
    return {k: np.array(v) for k, v in model.parameters().items()}


@unittest.skipIf(TORCH_MISSING, TORCH_MISSING or "")
class TorchBinTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ct-torchbin-")
        self.model = Model.create("bert-test", task="masked-lm", seed=5)
        self.model.save(os.path.join(self.dir, "st"))
        self.want = as_f32(self.model)

    def tearDown(self):
        self.model.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def folder(self, name, sd, **save):
        """A folder with the safetensors one's config.json and sd in
        pytorch_model.bin; its path."""
        path = os.path.join(self.dir, name)
        os.makedirs(path)
        shutil.copy(os.path.join(self.dir, "st", "config.json"), path)
        torch.save(sd, os.path.join(path, "pytorch_model.bin"), **save)
        return path

    def loaded(self, path):
        with Model.load(path, task="masked-lm") as m:
            self.assertEqual(m.new_tensors(), [])
            return as_f32(m)

    def test_f32_loads_bit_for_bit(self):
        sd = state_dict(self.model)
        sd._metadata = collections.OrderedDict({"": {"version": 1}})
        got = self.loaded(self.folder("f32", sd))
        self.assertEqual(sorted(got), sorted(self.want))
        for k in self.want:
            self.assertTrue(np.array_equal(got[k], self.want[k]), k)

    def test_bf16_and_f16_widen_exactly(self):
        for dtype in (torch.bfloat16, torch.float16):
            with self.subTest(dtype=dtype):
                sd = collections.OrderedDict((k, v.to(dtype)) for k, v in
                                             state_dict(self.model).items())
                got = self.loaded(self.folder(str(dtype), sd))
                for k, v in sd.items():
                    self.assertTrue(np.array_equal(got[k], v.float().numpy()), k)

    def test_views_shared_storage_parameters_protocol_4(self):
        sd = state_dict(self.model)
        name = "bert.encoder.layer.0.attention.self.query.weight"
        # a weight stored transposed (a strided view), one inside a larger
        # storage at an offset, the MLM decoder tied to the word embeddings
        # (one storage), nn.Parameter values
        sd[name] = sd[name].t().contiguous().t()
        bias = "bert.encoder.layer.1.output.dense.bias"
        big = torch.cat([torch.full((7,), 9.0), sd[bias]])
        sd[bias] = big[7:]
        decoder = "cls.predictions.decoder.weight"
        if decoder in sd:
            sd[decoder] = sd["bert.embeddings.word_embeddings.weight"]
        sd["bert.embeddings.LayerNorm.weight"] = torch.nn.Parameter(
            sd["bert.embeddings.LayerNorm.weight"])
        self.assertFalse(sd[name].is_contiguous())
        for protocol in (2, 4):
            with self.subTest(protocol=protocol):
                got = self.loaded(self.folder("views%d" % protocol, sd, pickle_protocol=protocol))
                for k in self.want:
                    self.assertTrue(np.array_equal(got[k], self.want[k]), k)

    def test_sharded_index(self):
        sd = state_dict(self.model)
        path = os.path.join(self.dir, "sharded")
        os.makedirs(path)
        shutil.copy(os.path.join(self.dir, "st", "config.json"), path)
        keys = list(sd)
        shards = {"pytorch_model-00001-of-00002.bin": keys[: len(keys) // 2],
                  "pytorch_model-00002-of-00002.bin": keys[len(keys) // 2:]}
        weight_map = {}
        for file, names in shards.items():
            torch.save(collections.OrderedDict((k, sd[k]) for k in names),
                       os.path.join(path, file))
            weight_map.update({k: file for k in names})
        with open(os.path.join(path, "pytorch_model.bin.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f)
        got = self.loaded(path)
        for k in self.want:
            self.assertTrue(np.array_equal(got[k], self.want[k]), k)

    def refused(self, path, *needles):
        with self.assertRaises(CputrainError) as cm:
            Model.load(path, task="masked-lm")
        for needle in needles:
            self.assertIn(needle, cm.exception.message)
        return cm.exception.message

    def test_legacy_format_and_other_dtypes_refused(self):
        sd = state_dict(self.model)
        self.refused(self.folder("legacy", sd, _use_new_zipfile_serialization=False),
                     "legacy torch.save format")
        sd["bert.embeddings.position_ids"] = torch.arange(4)  # int64, as old BERT files hold
        self.refused(self.folder("int64", sd), "torch.LongStorage",
                     "only F32, F16 and BF16")

    def rewritten(self, name, pickle_bytes=None, member=None, compress=False):
        """The f32 folder's archive with data.pkl (or one member) replaced."""
        src = self.folder(name + "-src", state_dict(self.model))
        path = os.path.join(self.dir, name)
        os.makedirs(path)
        shutil.copy(os.path.join(src, "config.json"), path)
        with zipfile.ZipFile(os.path.join(src, "pytorch_model.bin")) as zin, \
                zipfile.ZipFile(os.path.join(path, "pytorch_model.bin"), "w",
                                zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED) as zout:
            for info in zin.infolist():
                data = zin.read(info.filename)
                if pickle_bytes is not None and info.filename.endswith("/data.pkl"):
                    data = pickle_bytes
                if member is not None and info.filename.endswith(member[0]):
                    data = member[1](data)
                zout.writestr(info.filename, data)
        return path

    def test_malicious_pickles_refused_by_name(self):
        marker = os.path.join(self.dir, "ran")
        command = ("touch " + marker).encode()
        cases = {
            # os.system("touch ..."): the classic pickle exploit
            "os": (b"\x80\x02cos\nsystem\nX" + struct.pack("<I", len(command)) + command +
                   b"\x85R.", "the global os.system is refused"),
            "eval": (b"\x80\x02cbuiltins\neval\nX\x01\x00\x00\x001\x85R.",
                     "the global builtins.eval is refused"),
            # an allowed global called the wrong way
            "storage-call": (b"\x80\x02ctorch\nFloatStorage\n)R.",
                             "REDUCE of torch.FloatStorage is refused"),
            # INST, an opcode that calls what it names
            "inst": (b"\x80\x02(ios\nsystem\n.", "an opcode torch.save does not write"),
            # a tensor claiming more of its storage than there is
            "past-end": (b"\x80\x02ccollections\nOrderedDict\n)R(X\x01\x00\x00\x00w"
                         b"ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storage"
                         b"ctorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x02tQ"
                         b"K\x00K\x05\x85K\x01\x85\x89ccollections\nOrderedDict\n)Rt"
                         b"Ru.", "reaches past the end of its storage"),
            "not-a-dict": (b"\x80\x02K\x01.", "not a state dict"),
        }
        for name, (payload, needle) in cases.items():
            with self.subTest(case=name):
                self.refused(self.rewritten(name, payload), needle)
        self.assertFalse(os.path.exists(marker), "a pickle ran a command")

    def test_damaged_archives_refused(self):
        flip = lambda b: bytes([b[0] ^ 1]) + b[1:]  # noqa: E731
        path = self.rewritten("crc", member=("/data/0", flip))
        # the rewritten member has a right CRC: damage the stored bytes instead
        with open(os.path.join(path, "pytorch_model.bin"), "rb") as f:
            blob = bytearray(f.read())
        at = blob.find(b"PK\x03\x04")
        blob[at + 30 + struct.unpack("<H", blob[at + 26:at + 28])[0] +
             struct.unpack("<H", blob[at + 28:at + 30])[0]] ^= 0x40
        with open(os.path.join(path, "pytorch_model.bin"), "wb") as f:
            f.write(blob)
        self.refused(path, "fails its CRC-32")
        self.refused(self.rewritten("deflated", compress=True), "is compressed")
        self.refused(self.rewritten("short", member=("/data/0", lambda b: b[:-4])),
                     "storage", "bytes, not")
        with open(os.path.join(path, "pytorch_model.bin"), "wb") as f:
            f.write(b"PK\x03\x04" + b" not an archive" * 8)
        self.refused(path, "not a ZIP archive")


if __name__ == "__main__":
    unittest.main()
