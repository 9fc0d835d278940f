"""Model and Batch, the binding itself: errors that name the problem, views
of the library's buffers without copies, shapes, the input forms accepted,
and the lifetime of the handles. Numbers are checked against PyTorch in
test_model_torch.py; here only what the binding adds."""

import array
import ctypes
import gc
import json
import os
import pickle
import shutil
import struct
import tempfile
import unittest
import weakref

import cputrain
from cputrain import (Batch, CputrainError, DType, Model, Precision, Status, Task,
                      TensorInfo)
from cputrain import _model
from cputrain._lib import lib

from helpers import TempDirTest, needs_numpy, np

B, T = 2, 6
IDS = [[2, 17, 33, 5, 9, 3], [2, 41, 8, 3, 0, 0]]
MASK = [[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]]
TYPES = [[0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 0, 0]]


def qa_model(**kw):
    model = Model.create("bert-test", task="question-answering", seed=kw.pop("seed", 3))
    model.training = False
    return model


class ProfileTest(unittest.TestCase):

    def test_a_step_lands_in_its_families(self):
        with Model.create("bert-test", task="question-answering") as m:
            m.precision = "bf16"
            ids = [[5, 6, 7, 8]] * 2
            cputrain.reset_profile()
            cputrain.set_profile_enabled(True)
            try:
                m.forward_backward(ids, start_positions=[1, 2], end_positions=[2, 3])
            finally:
                cputrain.set_profile_enabled(False)
        p = cputrain.profile()
        self.assertEqual(list(p)[:3], ["gemm_forward", "gemm_input_grad", "gemm_weight_grad"])
        self.assertGreater(p["gemm_forward"]["calls"], 0)
        self.assertGreater(p["gemm_forward"]["flops"], 0)
        self.assertGreater(p["attention_backward"]["seconds"], 0)
        self.assertEqual(p["allreduce_wait"]["calls"], 0)
        cputrain.reset_profile()
        self.assertEqual(cputrain.profile()["gemm_forward"]["calls"], 0)
        gflops, gbs = cputrain.kernel_peak("fp32", threads=1)
        self.assertGreater(gflops, 0)
        self.assertGreater(gbs, 0)
        with self.assertRaises(ValueError):
            cputrain.kernel_peak("fp8")


class CreateTest(unittest.TestCase):

    def test_architectures_and_tasks(self):
        expected = {
            ("bert-test", Task.QUESTION_ANSWERING): "BertForQuestionAnswering",
            ("bert-test", Task.SEQUENCE_CLASSIFICATION): "BertForSequenceClassification",
            ("bert-test", Task.MASKED_LM): "BertForMaskedLM",
            ("distilbert-test", Task.QUESTION_ANSWERING): "DistilBertForQuestionAnswering",
            ("distilbert-test", Task.SEQUENCE_CLASSIFICATION): "DistilBertForSequenceClassification",
            ("distilbert-test", Task.MASKED_LM): "DistilBertForMaskedLM",
        }
        for (config, task), arch in expected.items():
            with self.subTest(config=config, task=task), Model.create(config, task=task) as m:
                self.assertEqual(m.architecture, arch)
                self.assertIs(m.task, task)

    def test_task_names(self):
        for name, task in (("question-answering", Task.QUESTION_ANSWERING),
                           ("text-classification", Task.SEQUENCE_CLASSIFICATION),
                           ("sequence_classification", Task.SEQUENCE_CLASSIFICATION),
                           ("fill-mask", Task.MASKED_LM), (2, Task.MASKED_LM)):
            with Model.create("bert-test", task=name) as m:
                self.assertIs(m.task, task)

    def test_bad_arguments_name_the_problem(self):
        with self.assertRaisesRegex(ValueError, "unknown task 'translation'.*question-answering"):
            Model.create("bert-test", task="translation")
        with self.assertRaisesRegex(ValueError, "7 is not a valid task"):
            Model.create("bert-test", task=7)
        with self.assertRaisesRegex(TypeError, "seed must be an int"):
            Model.create("bert-test", seed=1.5)
        with self.assertRaisesRegex(OverflowError, "seed -1"):
            Model.create("bert-test", seed=-1)
        with self.assertRaisesRegex(TypeError, "config must be a str or path"):
            Model.create(42)
        with self.assertRaisesRegex(TypeError, "Model.create"):
            Model()
        with self.assertRaises(CputrainError) as cm:
            Model.create("bert-huge")
        self.assertEqual(cm.exception.status, Status.ERR_NOT_FOUND)
        self.assertIn("bert-huge", cm.exception.message)
        self.assertIn("bert-base-uncased", cm.exception.message, "lists the built-in names")

    def test_load_errors_name_the_folder(self):
        missing = os.path.join(tempfile.gettempdir(), "cputrain-no-such-model-dir")
        with self.assertRaises(CputrainError) as cm:
            Model.load(missing)
        self.assertIn("cputrain-no-such-model-dir", cm.exception.message)

    def test_config_file_and_pathlike(self):
        import pathlib
        d = tempfile.mkdtemp()
        try:
            path = pathlib.Path(d) / "config.json"
            path.write_text('{"model_type": "bert", "vocab_size": 50, "hidden_size": 16, '
                            '"num_hidden_layers": 1, "num_attention_heads": 2, '
                            '"intermediate_size": 24, "max_position_embeddings": 20, '
                            '"num_labels": 5}')
            with Model.create(path, task="sequence-classification") as m:
                self.assertEqual(m.config["vocab_size"], 50)
                self.assertEqual(m.config_int("num_labels"), 5)
                self.assertEqual(m.config_int("num_hidden_layers"), 1)
        finally:
            shutil.rmtree(d)

    def test_config_values(self):
        with qa_model() as m:
            self.assertEqual(m.config, {
                "vocab_size": 128, "hidden_size": 32, "num_hidden_layers": 2,
                "num_attention_heads": 4, "intermediate_size": 64,
                "max_position_embeddings": 64, "type_vocab_size": 2, "num_labels": 2,
                "pad_token_id": 0})
            with self.assertRaises(CputrainError) as cm:
                m.config_int("hidden_dim")
            self.assertEqual(cm.exception.status, Status.ERR_NOT_FOUND)
            self.assertIn("hidden_dim", cm.exception.message)

    def test_parameter_count(self):
        with qa_model() as m:
            infos = [m.tensor_info(n) for n in m.tensor_names()]
            self.assertEqual(m.num_parameters(), sum(i.numel for i in infos))
            self.assertEqual(len(m.parameters()), len(infos))
            self.assertEqual(m.new_tensors(), [])

    def test_memory_bytes(self):
        with qa_model() as m, cputrain.TrainingArgs() as args:
            names = Model.memory_categories()
            self.assertEqual(names[:2], ["parameters", "gradients"])
            self.assertIn("packed_weights", names)
            mem = m.memory_bytes()
            self.assertEqual(list(mem), names)
            self.assertGreaterEqual(mem["parameters"], 4 * m.num_parameters())
            self.assertEqual(mem["gradients"], mem["parameters"])
            self.assertEqual(mem["packed_weights"], 0)  # fp32
            self.assertEqual(mem["activations"], 0)
            self.assertEqual(m.memory_bytes("parameters"), mem["parameters"])
            with self.assertRaises(CputrainError) as cm:
                m.memory_bytes("moments")
            self.assertEqual(cm.exception.status, Status.ERR_NOT_FOUND)
            self.assertIn("moments", cm.exception.message)
            with cputrain.Optimizer(m, args) as opt:
                self.assertEqual(opt.memory_bytes(), 2 * mem["parameters"])

    def test_bert_base_parameter_count(self):
        # The number model.h states (and Transformers prints).
        with Model.create("bert-base-uncased", task="question-answering") as m:
            self.assertEqual(m.num_parameters(), 108_893_186)


class TensorTest(unittest.TestCase):

    def setUp(self):
        self.model = qa_model()

    def tearDown(self):
        self.model.close()

    def test_names_shapes_decay(self):
        names = self.model.tensor_names()
        self.assertEqual(names[0], "bert.embeddings.word_embeddings.weight")
        self.assertEqual(names[-2:], ["qa_outputs.weight", "qa_outputs.bias"])
        info = self.model.tensor_info("bert.encoder.layer.1.intermediate.dense.weight")
        self.assertEqual(info, TensorInfo("bert.encoder.layer.1.intermediate.dense.weight",
                                          (64, 32), 64 * 32, True))
        bias = self.model.tensor_info("bert.encoder.layer.0.attention.self.query.bias")
        self.assertFalse(bias.decays)
        self.assertFalse(self.model.tensor_info("bert.embeddings.LayerNorm.weight").decays)
        self.assertTrue(self.model.tensor_info("bert.embeddings.word_embeddings.weight").decays)
        self.assertEqual(self.model.tensor_info("qa_outputs.bias").shape, (2,))

    def test_unknown_name(self):
        params = self.model.parameters()
        self.assertNotIn("qa_outputs.kernel", params)
        self.assertIn("qa_outputs.weight", params)
        self.assertIsNone(params.get("qa_outputs.kernel"))
        with self.assertRaisesRegex(KeyError, "qa_outputs.kernel"):
            params["qa_outputs.kernel"]
        with self.assertRaises(CputrainError) as cm:
            self.model.tensor_info("qa_outputs.kernel")
        self.assertIn("BertForQuestionAnswering has no tensor named 'qa_outputs.kernel'",
                      cm.exception.message)

    def test_mapping_order_matches_names(self):
        self.assertEqual(list(self.model.parameters()), self.model.tensor_names())
        self.assertEqual(list(self.model.grads().keys()), self.model.tensor_names())

    @needs_numpy
    def test_views_do_not_copy(self):
        name = "bert.encoder.layer.0.output.dense.weight"
        index = ctypes.c_size_t()
        lib.ct_model_tensor_index(self.model._handle, name.encode(), ctypes.byref(index))
        address = ctypes.cast(lib.ct_model_tensor_data(self.model._handle, index.value),
                              ctypes.c_void_p).value
        a, b = self.model.parameters()[name], self.model.parameters()[name]
        self.assertEqual(a.__array_interface__["data"][0], address)
        self.assertTrue(np.shares_memory(a, b))
        self.assertEqual(a.shape, (32, 64))
        self.assertEqual(a.dtype, np.float32)
        self.assertTrue(a.flags.c_contiguous and a.flags.writeable)
        self.assertFalse(a.flags.owndata)
        a[3, 4] = 12.5
        self.assertEqual(self.model.parameters()[name][3, 4], 12.5)
        g = self.model.grads()[name]
        self.assertFalse(np.shares_memory(a, g))
        self.assertEqual(g.shape, a.shape)

    @needs_numpy
    def test_grad_views_see_zero_grad_and_accumulation(self):
        g = self.model.grads()["qa_outputs.weight"]
        self.assertFalse(g.any(), "a new model has zero gradients")
        self.model.forward_backward(IDS, TYPES, MASK, [1, 2], [3, 2])
        once = g.copy()
        self.assertTrue(once.any())
        self.model.forward_backward(IDS, TYPES, MASK, [1, 2], [3, 2])
        np.testing.assert_allclose(g, 2 * once, rtol=1e-5, atol=1e-9)
        self.model.zero_grad()
        self.assertFalse(g.any())

    @needs_numpy
    def test_writing_parameters_then_params_changed(self):
        self.model.precision = "bf16"
        self.model.forward(IDS, TYPES, MASK)
        before = self.model.logits(copy=True)
        self.model.parameters()["qa_outputs.bias"][:] = [5.0, -5.0]
        self.model.params_changed()
        self.model.forward(IDS, TYPES, MASK)
        after = self.model.logits()
        kept = np.asarray(MASK) == 1  # padding is not computed: its logits read 0
        np.testing.assert_allclose((after - before)[kept][:, 0], 5.0, atol=0.05)
        np.testing.assert_allclose((after - before)[kept][:, 1], -5.0, atol=0.05)
        self.assertFalse(after[~kept].any())

    @needs_numpy
    def test_views_keep_the_model_alive(self):
        model = qa_model(seed=9)
        ref = weakref.ref(model)
        view = model.parameters()["qa_outputs.weight"]
        expected = view.copy()
        del model
        gc.collect()
        self.assertIsNotNone(ref(), "the view holds the model")
        np.testing.assert_array_equal(view, expected)
        del view
        gc.collect()
        self.assertIsNone(ref(), "and lets it go")

    def test_memoryviews_without_numpy(self):
        saved = _model._np
        _model._np = None
        try:
            w = self.model.parameters()["qa_outputs.weight"]
            self.assertIsInstance(w, memoryview)
            self.assertEqual((w.format, w.shape, w.readonly), ("f", (2, 32), False))
            w[0, 0] = 0.5
            self.assertEqual(self.model.parameters()["qa_outputs.weight"][0, 0], 0.5)
            self.model.forward(IDS, TYPES, MASK)
            logits = self.model.logits()
            self.assertEqual((logits.shape, logits.readonly), ((B, T, 2), True))
            copy = self.model.logits(copy=True)
            self.assertFalse(copy.readonly)
            self.assertEqual(copy.tolist(), logits.tolist())
        finally:
            _model._np = saved


class ComputeTest(unittest.TestCase):

    def setUp(self):
        self.model = qa_model()

    def tearDown(self):
        self.model.close()

    def test_logits_shapes(self):
        for config, task, shape in (("bert-test", "question-answering", (B, T, 2)),
                                    ("distilbert-test", "sequence-classification", (B, 2)),
                                    ("bert-test", "masked-lm", (B, T, 128)),
                                    ("distilbert-test", "token-classification", (B, T, 2))):
            with self.subTest(task=task), Model.create(config, task=task) as m:
                with self.assertRaises(CputrainError) as cm:
                    m.logits()
                self.assertEqual(cm.exception.status, Status.ERR_STATE)
                self.assertIsNone(m.forward(IDS, TYPES, MASK))
                self.assertEqual(tuple(m.logits().shape), shape)

    def test_loss_is_a_float(self):
        loss = self.model.forward_backward(IDS, TYPES, MASK, start_positions=[1, 2],
                                           end_positions=[3, 2])
        self.assertIsInstance(loss, float)
        self.assertTrue(0 < loss < 10)
        self.assertEqual(loss, self.model.forward(IDS, TYPES, MASK, [1, 2], [3, 2]))

    @needs_numpy
    def test_logits_are_read_only_and_copy_is_not(self):
        self.model.forward(IDS, TYPES, MASK)
        view = self.model.logits()
        self.assertFalse(view.flags.writeable)
        with self.assertRaises(ValueError):
            view[0, 0, 0] = 1.0
        copy = self.model.logits(copy=True)
        self.assertTrue(copy.flags.writeable and copy.flags.owndata)
        np.testing.assert_array_equal(copy, view)

    def logits_for(self, *args, **kwargs):
        self.model.forward(*args, **kwargs)
        return self.model.logits(copy=True).tolist()

    def test_input_forms_agree(self):
        expected = self.logits_for(IDS, TYPES, MASK)
        flat = lambda rows: [x for r in rows for x in r]  # noqa: E731
        forms = [
            ((tuple(tuple(r) for r in IDS), TYPES, MASK), {}),
            ((array.array("i", flat(IDS)), array.array("i", flat(TYPES)), array.array("i", flat(MASK))),
             {"batch_size": B}),
            ((array.array("l", flat(IDS)), flat(TYPES), flat(MASK)), {"batch_size": B}),
            ((struct.pack("=%di" % (B * T), *flat(IDS)), struct.pack("=%di" % (B * T), *flat(TYPES)),
              bytearray(struct.pack("=%di" % (B * T), *flat(MASK)))), {"batch_size": B}),
            ((memoryview(array.array("i", flat(IDS))), TYPES, MASK), {"batch_size": B}),
        ]
        if np is not None:
            forms += [
                ((np.array(IDS, np.int32), np.array(TYPES, np.int32), np.array(MASK, np.int32)), {}),
                ((np.array(IDS, np.int64), np.array(TYPES, np.uint8), np.array(MASK, bool)), {}),
                ((np.asfortranarray(np.array(IDS, np.int32)), TYPES, MASK), {}),
                ((np.array(IDS, np.int32).ravel(), TYPES, MASK), {"batch_size": B}),
            ]
        for i, (args, kwargs) in enumerate(forms):
            with self.subTest(form=i, type=type(args[0]).__name__):
                self.assertEqual(self.logits_for(*args, **kwargs), expected)

    def test_one_sequence(self):
        one = self.logits_for(IDS[0], TYPES[0], MASK[0])
        self.assertEqual(len(one), 1)
        # Same values as row 0 of the batch, up to the summation order of
        # differently blocked matrix products.
        for got, want in zip(one[0], self.logits_for(IDS, TYPES, MASK)[0]):
            for g, w in zip(got, want):
                self.assertAlmostEqual(g, w, delta=1e-6)

    def test_defaults_for_types_and_mask(self):
        self.assertEqual(self.logits_for(IDS),
                         self.logits_for(IDS, [[0] * T] * B, [[1] * T] * B))

    def test_input_errors_name_the_argument(self):
        m = self.model
        cases = [
            (TypeError, "input_ids must hold integers", lambda: m.forward([[1.5, 2.0]])),
            (TypeError, "input_ids must be a numpy array", lambda: m.forward(None)),
            (ValueError, "input_ids is ragged", lambda: m.forward([[1, 2, 3], [1, 2]])),
            (ValueError, r"input_ids must be 2-D", lambda: m.forward([[[1, 2]]])),
            (ValueError, r"attention_mask has shape \(2, 5\) but input_ids has \(2, 6\)",
             lambda: m.forward(IDS, attention_mask=[r[:5] for r in MASK])),
            (ValueError, "token_type_ids has shape", lambda: m.forward(IDS, [0, 1])),
            (OverflowError, "input_ids: value 4294967296", lambda: m.forward([[1, 1 << 32]])),
            (ValueError, "holds 6 values, not batch_size=4",
             lambda: m.forward(array.array("i", IDS[0]), batch_size=4)),
            (ValueError, "not a whole number of int32", lambda: m.forward(b"\x01\x02\x03")),
            (TypeError, "buffer format 'd'", lambda: m.forward(array.array("d", [1.0]))),
            (ValueError, "start_positions and end_positions go together",
             lambda: m.forward(IDS, start_positions=[1, 2])),
            (ValueError, r"start_positions has shape \(3,\); the batch has 2 sequences",
             lambda: m.forward(IDS, start_positions=[1, 2, 3], end_positions=[1, 2, 3])),
            (TypeError, "loss_scale must be a number",
             lambda: m.forward_backward(IDS, start_positions=[1, 2], end_positions=[1, 2],
                                        loss_scale="1")),
            (ValueError, "input_ids is empty", lambda: m.forward([[]])),
        ]
        if np is not None:
            cases += [
                (TypeError, "input_ids must hold integers, not float32",
                 lambda: m.forward(np.zeros((2, 3), np.float32))),
                (OverflowError, "attention_mask: value -4294967296",
                 lambda: m.forward(IDS, attention_mask=np.full((2, 6), -(1 << 32), np.int64))),
            ]
        for error, pattern, call in cases:
            with self.subTest(pattern=pattern):
                with self.assertRaisesRegex(error, pattern):
                    call()

    def test_library_errors_name_the_problem(self):
        m = self.model
        cases = [
            ("input_ids[1][2] = 128 is outside the vocabulary",
             lambda: m.forward([[1] * T, [1, 1, 128, 1, 1, 1]])),
            ("input_ids", lambda: m.forward([[-1] * T] * B)),
            ("token_type_ids[0][1] = 2", lambda: m.forward(IDS, [[0, 2, 0, 0, 0, 0], [0] * T])),
            ("attention_mask[0][3] is 2", lambda: m.forward(IDS, TYPES, [[1, 1, 1, 2, 1, 1], [1] * T])),
            ("max_position_embeddings 64", lambda: m.forward([[1] * 65])),
            ("start and end positions", lambda: m.forward_backward(IDS, TYPES, MASK)),
            ("loss_scale", lambda: m.forward_backward(IDS, start_positions=[1, 2],
                                                      end_positions=[1, 2], loss_scale=float("inf"))),
        ]
        for needle, call in cases:
            with self.subTest(needle=needle):
                with self.assertRaises(CputrainError) as cm:
                    call()
                self.assertIn(needle, cm.exception.message)

    def test_labels_for_each_head(self):
        with Model.create("bert-test", task="masked-lm") as m:
            labels = [[-100, 17, -100, -100, 9, -100], [-100] * T]
            self.assertGreater(m.forward_backward(IDS, TYPES, MASK, labels=labels), 0)
            with self.assertRaises(CputrainError) as cm:
                m.forward_backward(IDS, TYPES, MASK, labels=[1, 2])
            self.assertIn("masked LM needs 12 labels", cm.exception.message)
            with self.assertRaisesRegex(TypeError, "labels must be integer ids for BertForMaskedLM"):
                m.forward_backward(IDS, labels=[[0.5] * T] * B)
            with self.assertRaisesRegex(ValueError, r"labels has shape \(2, 5\)"):
                m.forward_backward(IDS, labels=[[1] * 5] * B)
        with Model.create("distilbert-test", task="sequence-classification") as m:
            self.assertGreater(m.forward_backward(IDS, labels=[1, 0]), 0)
            with self.assertRaises(CputrainError) as cm:
                m.forward_backward(IDS)
            self.assertIn("sequence classification needs 2 class ids", cm.exception.message)
        with Model.create("bert-test", task="token-classification") as m:
            self.assertGreater(m.forward_backward(IDS, TYPES, MASK, labels=[[-100, 1, 0, 1, 0, 1],
                                                                           [-100] * T]), 0)
            with self.assertRaises(CputrainError) as cm:
                m.forward_backward(IDS, labels=[1, 0])
            self.assertIn("token classification needs 12 labels", cm.exception.message)
            with self.assertRaises(CputrainError) as cm:  # a class beyond num_labels 2
                m.forward_backward(IDS, labels=[[0, 2, 0, 0, 0, 0], [-100] * T])
            self.assertIn("labels[1] = 2 is neither a class in [0, 2)", cm.exception.message)
            with self.assertRaises(CputrainError) as cm:  # padding must be labelled -100
                m.forward_backward(IDS, TYPES, MASK, labels=[[0] * T, [0] * T])
            self.assertIn("labels[1][4] = 0 is at a position the attention mask excludes",
                          cm.exception.message)

    def test_labels_given_for_a_new_head_are_saved_as_transformers_does(self):
        d = tempfile.mkdtemp()
        try:
            def saved(model):
                folder = tempfile.mkdtemp(dir=d)
                model.save(folder)
                with open(os.path.join(folder, "config.json")) as f:
                    text = f.read()
                config = json.loads(text)
                self.assertEqual(list(config), sorted(config), "keys sorted, as Transformers")
                return folder, config

            names = ["negative", "neutral", "positive"]
            with Model.create("bert-test", task="sequence-classification", id2label=names,
                              problem_type="single_label_classification") as m:
                self.assertEqual(m.id2label, dict(enumerate(names)))
                self.assertEqual(m.label2id["neutral"], 1)
                folder, config = saved(m)
            self.assertEqual(config["id2label"], {"0": "negative", "1": "neutral",
                                                  "2": "positive"})
            self.assertEqual(config["label2id"], {"negative": 0, "neutral": 1, "positive": 2})
            self.assertEqual(config["problem_type"], "single_label_classification")
            # A file's keys stay, the labels given replace its own (num_labels too).
            with open(os.path.join(folder, "config.json")) as f:
                config = json.load(f)
            config["num_labels"] = 3
            config["custom_key"] = "kept"
            with open(os.path.join(folder, "config.json"), "w") as f:
                json.dump(config, f, indent=2, sort_keys=True)
            with self.assertRaises(CputrainError) as cm:  # no ignore_mismatched_sizes
                Model.load(folder, num_labels=2)
            self.assertIn("classifier.weight", cm.exception.message)
            self.assertIn("[2, 32]", cm.exception.message)
            with Model.load(folder, num_labels=2, ignore_mismatched_sizes=True) as m:
                self.assertEqual(m.config_int("num_labels"), 2)
                self.assertIn("classifier.weight", m.new_tensors())
            with Model.create(os.path.join(folder, "config.json"),
                              task="token-classification", id2label={0: "O", 1: "B-X"}) as m:
                self.assertEqual(m.config_int("num_labels"), 2)
                _, config = saved(m)
            self.assertEqual(config["custom_key"], "kept")
            self.assertNotIn("num_labels", config)
            self.assertEqual(config["id2label"], {"0": "O", "1": "B-X"})
            self.assertEqual(config["architectures"], ["BertForTokenClassification"])
            for kw, needle in ((dict(id2label=["a", "a"]), "both \"a\""),
                               (dict(num_labels=3, problem_type="ranking"), "problem_type")):
                with self.subTest(kw=kw):
                    with self.assertRaises(CputrainError) as cm:
                        Model.create("bert-test", task="sequence-classification", **kw)
                    self.assertIn(needle, cm.exception.message)
            with self.assertRaises(ValueError):
                Model.create("bert-test", task="sequence-classification", num_labels=0,
                             id2label=[])
            with self.assertRaises(CputrainError) as cm:
                Model.create("bert-test", task="question-answering", num_labels=3)
            self.assertIn("classification heads", cm.exception.message)
            with self.assertRaises(TypeError):
                Model.create("bert-test", task="sequence-classification", num_label=3)
        finally:
            shutil.rmtree(d)

    def test_load_takes_the_head_from_architectures(self):
        d = tempfile.mkdtemp()
        try:
            mlm, ner = os.path.join(d, "mlm"), os.path.join(d, "ner")
            for folder, task in ((mlm, "masked-lm"), (ner, "token-classification")):
                os.mkdir(folder)
                with Model.create("bert-test", task=task, seed=3) as m:
                    m.save(folder)
            with Model.load(ner) as m:
                self.assertEqual(m.task, Task.TOKEN_CLASSIFICATION)
                nested = os.path.join(d, "new", "deeper")  # made, as save_pretrained does
                m.save(nested)
                self.assertTrue(os.path.exists(os.path.join(nested, "model.safetensors")))
                self.assertEqual(m.architecture, "BertForTokenClassification")
                self.assertEqual(m.new_tensors(), [])
            with Model.load(mlm) as m:
                self.assertEqual(m.architecture, "BertForMaskedLM")
            # A fine-tuned MLM encoder under a new token-classification head.
            with Model.load(mlm, task="token-classification") as m:
                self.assertEqual(m.new_tensors(), ["classifier.weight", "classifier.bias"])
        finally:
            shutil.rmtree(d)

    def test_out_of_range_labels_are_errors(self):
        # torch's cross_entropy refuses a target outside [0, classes) other
        # than ignore_index (Transformers then fails); so must the library,
        # rather than train on a silently shortened batch.
        with Model.create("bert-test", task="sequence-classification") as m:
            for labels in ([0, 2], [-1, 0]):
                with self.subTest(labels=labels):
                    with self.assertRaises(CputrainError) as cm:
                        m.forward_backward(IDS, labels=labels)
                    self.assertIn("labels", cm.exception.message)
        with Model.create("bert-test", task="masked-lm") as m:
            with self.assertRaises(CputrainError) as cm:
                m.forward_backward(IDS, labels=[[-100] * 5 + [128], [-100] * T])
            self.assertIn("labels", cm.exception.message)

    def test_regression_labels(self):
        d = tempfile.mkdtemp()
        try:
            path = os.path.join(d, "config.json")
            with open(path, "w") as f:
                f.write('{"model_type": "distilbert", "vocab_size": 64, "dim": 16, "n_layers": 1, '
                        '"n_heads": 2, "hidden_dim": 32, "max_position_embeddings": 16, '
                        '"num_labels": 1}')
            with Model.create(path, task="sequence-classification") as m:
                m.training = False
                a = m.forward_backward(IDS, labels=[0.5, 2.0])
                self.assertEqual(m.forward_backward(IDS, labels=array.array("f", [0.5, 2.0])), a)
                self.assertEqual(m.forward_backward(IDS, labels=(1, 2)),
                                 m.forward_backward(IDS, labels=[1.0, 2.0]))
                self.assertEqual(tuple(m.logits().shape), (B, 1))
        finally:
            shutil.rmtree(d)

    def test_batch_objects(self):
        with Batch(IDS, TYPES, MASK, start_positions=[1, 2], end_positions=[3, 2]) as batch:
            self.assertEqual(batch.shape, (B, T))
            self.assertTrue(batch.has_labels)
            loss = self.model.forward_backward(batch)
            self.assertEqual(self.model.forward(batch), loss)
            with self.assertRaisesRegex(ValueError, "either a Batch or arrays"):
                self.model.forward(batch, TYPES)
            batch.set_inputs(IDS)
            self.assertFalse(batch.has_labels, "set_inputs clears the labels")
            self.assertIsNone(self.model.forward(batch))
        with self.assertRaisesRegex(ValueError, "closed Batch"):
            batch.batch_size
        with self.assertRaises(CputrainError) as cm:
            Batch().set_labels([1, 2])
        self.assertEqual(cm.exception.status, Status.ERR_STATE)
        self.assertEqual(Batch().shape, (0, 0))
        with self.assertRaisesRegex(ValueError, "need input_ids"):
            Batch(attention_mask=MASK)


class SettingsTest(unittest.TestCase):

    def setUp(self):
        self.model = qa_model()

    def tearDown(self):
        self.model.close()

    def test_precision(self):
        self.assertIs(self.model.precision, Precision.FP32)
        for value, expected in (("bf16", Precision.BF16), ("float32", Precision.FP32),
                                (Precision.BF16, Precision.BF16), (0, Precision.FP32)):
            self.model.precision = value
            self.assertIs(self.model.precision, expected)
        with self.assertRaisesRegex(ValueError, "unknown precision 'fp16'"):
            self.model.precision = "fp16"

    def test_training(self):
        with Model.create("bert-test") as m:
            self.assertTrue(m.training)
            self.assertIs(m.eval(), m)
            self.assertFalse(m.training)
            m.train()
            self.assertTrue(m.training)
            with self.assertRaisesRegex(TypeError, "training must be True or False"):
                m.training = 1

    def test_threads(self):
        self.assertGreaterEqual(self.model.threads, 1)
        self.model.threads = 1
        self.assertEqual(self.model.threads, 1)
        self.model.threads = 0  # automatic again
        self.assertGreaterEqual(self.model.threads, 1)
        with self.assertRaisesRegex(ValueError, "threads must be 0"):
            self.model.threads = -2
        with self.assertRaisesRegex(TypeError, "threads must be an int"):
            self.model.threads = "2"
        with self.assertRaises(CputrainError) as cm:
            self.model.threads = 100000
        self.assertIn("threads", cm.exception.message)

    def test_seed(self):
        self.model.set_seed(2 ** 64 - 1, 2 ** 64 - 1)
        with self.assertRaisesRegex(OverflowError, "step"):
            self.model.set_seed(1, -1)
        with self.assertRaisesRegex(TypeError, "seed must be an int"):
            self.model.set_seed("1")

    def test_repr(self):
        self.assertRegex(repr(self.model),
                         r"<Model BertForQuestionAnswering, \d+ parameters, fp32, eval>")


class SaveAndLifetimeTest(TempDirTest):

    prefix = "cputrain-api-"

    def test_save_and_load(self):
        with qa_model(seed=8) as m:
            for dtype in ("float32", "bf16", DType.F16):
                m.save(self.dir, dtype=dtype)
                self.assertEqual(sorted(os.listdir(self.dir)), ["config.json", "model.safetensors"])
            m.save(self.dir)
            with Model.load(self.dir, task="question-answering") as loaded:
                self.assertEqual(loaded.tensor_names(), m.tensor_names())
                for name in m.tensor_names():
                    self.assertEqual(list(memoryview(loaded.parameters()[name]).cast("B")),
                                     list(memoryview(m.parameters()[name]).cast("B")), name)
            with self.assertRaisesRegex(ValueError, "unknown dtype 'int8'"):
                m.save(self.dir, dtype="int8")
            with open(os.path.join(self.dir, "a_file"), "w"):
                pass
            with self.assertRaises(CputrainError) as cm:  # made when missing, not under a file
                m.save(os.path.join(self.dir, "a_file", "deeper"))
            self.assertIn("a_file", cm.exception.message)

    def test_load_for_another_head_lists_new_tensors(self):
        with Model.create("bert-test", task="masked-lm") as m:
            m.save(self.dir)
        with self.assertLogs("cputrain", "WARNING") as logs:
            loaded = Model.load(self.dir, task="sequence-classification", seed=1)
        with loaded:
            self.assertEqual(sorted(loaded.new_tensors()),
                             ["bert.pooler.dense.bias", "bert.pooler.dense.weight",
                              "classifier.bias", "classifier.weight"])
        self.assertTrue(any("newly initialised" in line for line in logs.output), logs.output)

    def test_close(self):
        m = qa_model()
        m.close()
        m.close()  # twice is fine
        self.assertEqual(repr(m), "<closed Model>")
        for call in (lambda: m.architecture, lambda: m.parameters(), lambda: m.forward(IDS),
                     lambda: m.save(self.dir), lambda: m.training, lambda: m.zero_grad()):
            with self.assertRaisesRegex(ValueError, "closed Model"):
                call()
        with qa_model() as m2:
            pass
        with self.assertRaisesRegex(ValueError, "closed Model"):
            m2.num_parameters()

    def test_not_picklable(self):
        with qa_model() as m:
            with self.assertRaisesRegex(TypeError, "save"):
                pickle.dumps(m)

    def test_exports(self):
        for name in ("Model", "Batch", "Task", "Precision", "DType", "TensorInfo"):
            self.assertIn(name, cputrain.__all__)
            self.assertIs(getattr(cputrain, name), getattr(_model, name))


if __name__ == "__main__":
    unittest.main()
