"""report_to tensorboard: the event files a training run leaves, read back
without TensorFlow or TensorBoard — every record's two CRCs checked by this
file's own CRC-32C, the protocol buffers decoded by hand from the wire
format, and the scalars compared with trainer_state.json's log_history
(float32, as SummaryWriter.add_scalar stores them, at each entry's step,
tagged as Transformers' TensorBoardCallback tags them). Where TensorBoard
itself is installed (it is not a Debian package, so only a developer who
installed it by hand has it), its own event loader reads the files too;
Debian's python3-protobuf parses every record and writes it back byte for
byte."""

import glob
import json
import math
import os
import re
import socket
import struct
import time
import unittest

from cputrain import CputrainError, Event, Model, Status, Trainer, TrainingArgs

from helpers import TempDirTest, qa_dataset

# ---- the format, written from its description -------------------------------


def _crc32c_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked_crc(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(path):
    """The data of every record; fails on a CRC mismatch or a torn end."""
    with open(path, "rb") as f:
        blob = f.read()
    records, at = [], 0
    while at < len(blob):
        assert len(blob) - at >= 12, "torn length at byte %d of %s" % (at, path)
        header = blob[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", blob[at + 8:at + 12])
        assert length_crc == masked_crc(header), "length CRC at byte %d" % at
        data = blob[at + 12:at + 12 + length]
        assert len(data) == length and len(blob) >= at + 16 + length, "torn record at %d" % at
        (data_crc,) = struct.unpack("<I", blob[at + 12 + length:at + 16 + length])
        assert data_crc == masked_crc(data), "data CRC at byte %d" % at
        records.append(data)
        at += 16 + length
    return records


def varint(buf, at):
    value = shift = 0
    while True:
        b = buf[at]
        at += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, at


def fields(buf):
    """[(field number, wire type, value)] of one message: ints for varints,
    bytes for fixed64 / fixed32 / length-delimited."""
    out, at = [], 0
    while at < len(buf):
        key, at = varint(buf, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = varint(buf, at)
        elif wire == 1:
            value, at = buf[at:at + 8], at + 8
        elif wire == 2:
            n, at = varint(buf, at)
            value, at = buf[at:at + n], at + n
        elif wire == 5:
            value, at = buf[at:at + 4], at + 4
        else:
            raise AssertionError("wire type %d" % wire)
        out.append((number, wire, value))
    assert at == len(buf), "message overruns its length"
    return out


def decode_event(data):
    """Event{wall_time=1, step=2, file_version=3, summary=5{value=1{tag=1,
    simple_value=2}}} into a dict; any other field is an error here."""
    event = {"step": 0, "values": []}
    for number, wire, value in fields(data):
        if (number, wire) == (1, 1):
            event["wall_time"] = struct.unpack("<d", value)[0]
        elif (number, wire) == (2, 0):
            event["step"] = value - (1 << 64) if value >> 63 else value
        elif (number, wire) == (3, 2):
            event["file_version"] = value.decode("utf-8")
        elif (number, wire) == (5, 2):
            for n2, w2, v2 in fields(value):
                assert (n2, w2) == (1, 2), "Summary field %d" % n2
                item = {}
                for n3, w3, v3 in fields(v2):
                    if (n3, w3) == (1, 2):
                        item["tag"] = v3.decode("utf-8")
                    elif (n3, w3) == (2, 5):
                        item["simple_value"] = v3  # the four bytes, compared exactly
                    else:
                        raise AssertionError("Summary.Value field %d" % n3)
                event["values"].append(item)
        else:
            raise AssertionError("Event field %d, wire type %d" % (number, wire))
    return event


def f32(value):
    return struct.pack("<f", value)


def tag_of(key):
    """Transformers' rewrite_logs."""
    if key.startswith("eval_"):
        return "eval/" + key[5:]
    if key.startswith("test_"):
        return "test/" + key[5:]
    return "train/" + key


# ---- the runs ------------------------------------------------------------------------


class TensorBoardTest(TempDirTest):

    prefix = "cputrain-tb-"

    def setUp(self):
        super().setUp()
        self.out = os.path.join(self.dir, "out")

    def run_training(self, evaluate=True, **kw):
        fields = dict(output_dir=self.out, per_device_train_batch_size=4,
                      gradient_accumulation_steps=2, num_train_epochs=2.0, learning_rate=1e-3,
                      logging_steps=2, save_steps=3, seed=11)
        if evaluate:
            fields.update(eval_strategy="steps", eval_steps=3)
        fields.update(kw)
        eval_ds = qa_dataset(8, seed=3)

        def evaluation(trainer):
            trainer.report_metric("eval_loss", trainer.evaluate_loss(eval_ds))
            trainer.report_metric("test_zero", 0.0)

        def progress(event, step, max_steps, epoch, log):
            # Each entry is in the file as soon as it is logged (a crash
            # would lose nothing already logged).
            if event in (Event.LOG, Event.EVALUATE) and watching:
                files = glob.glob(os.path.join(self.out, "runs", "*", "events.out.tfevents.*"))
                last = decode_event(read_records(files[0])[-1])
                self.seen_on_log.append((step, last["step"], last["values"][0]["tag"]))

        self.seen_on_log = []
        watching = fields.get("report_to") != "none" and not fields.get("logging_dir")
        model = Model.create("bert-test", task="question-answering", seed=1)
        with TrainingArgs(**fields) as args:
            trainer = Trainer(model, args, train_dataset=qa_dataset(), progress=progress,
                              evaluate=evaluation if evaluate else None)
        try:
            trainer.train()
            return trainer.log_history
        finally:
            trainer.close()
            model.close()

    def saved_args(self):
        with open(os.path.join(self.out, "training_args.json")) as f:
            return json.load(f)

    def test_events_are_the_log_history(self):
        started = time.time()
        history = self.run_training()
        finished = time.time()
        with open(os.path.join(self.out, "trainer_state.json")) as f:
            self.assertEqual(json.load(f)["log_history"], history)

        # logging_dir: Transformers' default_logdir() under output_dir, recorded.
        host = socket.gethostname()
        runs = os.listdir(os.path.join(self.out, "runs"))
        self.assertEqual(len(runs), 1, runs)
        self.assertRegex(runs[0], r"^(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
                                  r"\d\d_\d\d-\d\d-\d\d_" + re.escape(host) + "$")
        logdir = os.path.join(self.out, "runs", runs[0])
        stamp = time.strptime(runs[0][:14], "%b%d_%H-%M-%S")
        lo, hi = time.localtime(started - 1), time.localtime(finished + 1)
        self.assertTrue((lo.tm_mon, lo.tm_mday, lo.tm_hour, lo.tm_min, lo.tm_sec) <=
                        (stamp.tm_mon, stamp.tm_mday, stamp.tm_hour, stamp.tm_min,
                         stamp.tm_sec) <=
                        (hi.tm_mon, hi.tm_mday, hi.tm_hour, hi.tm_min, hi.tm_sec), runs[0])
        saved = self.saved_args()
        self.assertEqual(saved["logging_dir"], logdir)
        self.assertEqual(saved["report_to"], ["tensorboard"])

        # One file, named as TensorBoard's EventFileWriter names one.
        files = os.listdir(logdir)
        self.assertEqual(len(files), 1, files)
        m = re.match(r"^events\.out\.tfevents\.(\d{10})\." + re.escape(host) +
                     r"\.%d\.(\d+)$" % os.getpid(), files[0])
        self.assertIsNotNone(m, files[0])
        self.assertTrue(int(started) - 1 <= int(m.group(1)) <= finished)
        path = os.path.join(logdir, files[0])
        records = [decode_event(r) for r in read_records(path)]
        # The reader itself catches a flipped bit, in a length or in data.
        with open(path, "rb") as f:
            blob = bytearray(f.read())
        for at in (3, len(blob) - 6):
            broken = os.path.join(self.dir, "broken")
            with open(broken, "wb") as f:
                f.write(blob[:at] + bytes([blob[at] ^ 0x10]) + blob[at + 1:])
            with self.assertRaisesRegex(AssertionError, "CRC|torn"):
                read_records(broken)
        # Logged entries were in the file when the callbacks saw them:
        # epoch is each entry's last value.
        self.assertEqual([(s, s, "train/epoch") for s in (2, 3, 4, 6, 6, 6)], self.seen_on_log)

        first = records[0]
        self.assertEqual(first["file_version"], "brain.Event:2")
        self.assertEqual((first["step"], first["values"]), (0, []))
        self.assertTrue(started - 1 <= first["wall_time"] <= finished + 1)

        # Every other record: one scalar, at its entry's step, in time order.
        got = []
        for event in records[1:]:
            self.assertNotIn("file_version", event)
            self.assertEqual(len(event["values"]), 1)
            value = event["values"][0]
            got.append((event["step"], value["tag"], value["simple_value"]))
        walls = [e["wall_time"] for e in records]
        self.assertEqual(walls, sorted(walls))
        self.assertLessEqual(walls[-1], finished + 1)

        want = []
        for entry in history:
            for key, value in entry.items():
                if key != "step":
                    want.append((entry["step"], tag_of(key), f32(value)))
        # The same scalars; within an entry the file keeps the logged order
        # (epoch last), the history its sorted keys.
        self.assertEqual(sorted(got), sorted(want))
        self.assertEqual([g[0] for g in got], sorted(g[0] for g in got))
        tags = {g[1] for g in got}
        for tag in ("train/loss", "train/learning_rate", "train/grad_norm", "train/epoch",
                    "eval/loss", "test/zero", "train/train_runtime", "train/train_loss",
                    "train/total_flos"):
            self.assertIn(tag, tags)
        self.assertNotIn("train/step", tags)
        # A value spot-checked against the history by hand.
        loss_at_2 = [h["loss"] for h in history if h["step"] == 2 and "loss" in h][0]
        self.assertIn((2, "train/loss", f32(loss_at_2)), got)
        self.assertEqual(math.isclose(struct.unpack("<f", f32(loss_at_2))[0], loss_at_2,
                                      rel_tol=1e-6), True)

    def test_report_to_none_writes_no_events(self):
        self.run_training(evaluate=False, report_to="none")
        self.assertFalse(os.path.exists(os.path.join(self.out, "runs")))
        saved = self.saved_args()
        self.assertEqual(saved["report_to"], [])
        self.assertTrue(saved["logging_dir"].startswith(os.path.join(self.out, "runs") + "/"))
        with TrainingArgs() as args:
            args.load_json(os.path.join(self.out, "training_args.json"))
            self.assertEqual(args.report_to, "none")

    def test_given_logging_dir_and_tensorboard(self):
        logdir = os.path.join(self.dir, "tb", "deep", "run1")
        history = self.run_training(evaluate=False, report_to="tensorboard", logging_dir=logdir)
        files = glob.glob(os.path.join(logdir, "events.out.tfevents.*"))
        self.assertEqual(len(files), 1)
        self.assertFalse(os.path.exists(os.path.join(self.out, "runs")))
        events = [decode_event(r) for r in read_records(files[0])][1:]
        self.assertEqual(len(events), sum(len(h) - 1 for h in history))
        self.assertEqual(self.saved_args()["logging_dir"], logdir)
        with TrainingArgs() as args:  # training_args.json reads back
            args.load_json(os.path.join(self.out, "training_args.json"))
            self.assertEqual((args.report_to, args.logging_dir), ("tensorboard", logdir))

    def test_unusable_logging_dir_fails_at_start(self):
        blocker = os.path.join(self.dir, "plain-file")
        with open(blocker, "w"):
            pass
        steps = []
        model = Model.create("bert-test", task="question-answering", seed=1)
        with TrainingArgs(output_dir=self.out, per_device_train_batch_size=4, max_steps=2,
                          logging_dir=os.path.join(blocker, "runs")) as args:
            trainer = Trainer(model, args, train_dataset=qa_dataset(),
                              progress=lambda event, step, *rest: steps.append(step))
        with self.assertRaises(CputrainError) as caught:
            trainer.train()
        trainer.close()
        model.close()
        self.assertEqual(caught.exception.status, Status.ERR_IO)
        self.assertIn(blocker, caught.exception.message)
        self.assertIn("report_to tensorboard", caught.exception.message)
        self.assertEqual(steps, [], "refused before the first step")
        self.assertFalse(os.path.exists(os.path.join(self.out, "model.safetensors")))

    def test_other_integrations_are_refused_by_name(self):
        with self.assertRaises(CputrainError) as caught:
            TrainingArgs(report_to="wandb")
        self.assertEqual(caught.exception.status, Status.ERR_UNSUPPORTED)
        self.assertIn("'wandb' is not available here: only tensorboard", caught.exception.message)
        with self.assertRaises(CputrainError) as caught:
            TrainingArgs(report_to="tensorbaord")
        self.assertIn("invalid choice", caught.exception.message)
        with TrainingArgs() as args:
            self.assertIsNone(args.report_to)  # None: all, Transformers 4's default
            args.parse(["--report_to", "all"])
            self.assertEqual(args.report_to, "all")

    def test_protobufs_own_parser(self):
        """Debian's python3-protobuf, given the Event, Summary and Value
        fields of TensorBoard's event.proto and summary.proto: each record
        parses, and serializes back to exactly its bytes (the encoding is
        protobuf's canonical one)."""
        try:
            from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
        except ImportError:
            self.skipTest("python3-protobuf is not installed (scripts/install-deps.sh installs "
                          "it)")
        F = descriptor_pb2.FieldDescriptorProto
        proto = descriptor_pb2.FileDescriptorProto(name="cputrain_tb_test.proto",
                                                   package="cputrain_tb_test", syntax="proto3")
        summary = proto.message_type.add(name="Summary")
        value = summary.nested_type.add(name="Value")
        value.field.add(name="tag", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
        value.oneof_decl.add(name="value")
        value.field.add(name="simple_value", number=2, type=F.TYPE_FLOAT,
                        label=F.LABEL_OPTIONAL, oneof_index=0)
        summary.field.add(name="value", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                          type_name=".cputrain_tb_test.Summary.Value")
        event = proto.message_type.add(name="Event")
        event.field.add(name="wall_time", number=1, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
        event.field.add(name="step", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
        event.oneof_decl.add(name="what")
        event.field.add(name="file_version", number=3, type=F.TYPE_STRING,
                        label=F.LABEL_OPTIONAL, oneof_index=0)
        event.field.add(name="summary", number=5, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                        type_name=".cputrain_tb_test.Summary", oneof_index=0)
        pool = descriptor_pool.DescriptorPool()
        pool.Add(proto)
        descriptor = pool.FindMessageTypeByName("cputrain_tb_test.Event")
        if hasattr(message_factory, "GetMessageClass"):
            Message = message_factory.GetMessageClass(descriptor)
        else:
            Message = message_factory.MessageFactory(pool).GetPrototype(descriptor)

        history = self.run_training()
        path = glob.glob(os.path.join(self.saved_args()["logging_dir"], "events.out.tfevents.*"))
        records = read_records(path[0])
        self.assertGreater(len(records), len(history))
        for data in records:
            message = Message()
            message.ParseFromString(data)
            self.assertEqual(message.SerializeToString(), data)
            mine = decode_event(data)
            self.assertEqual((message.wall_time, message.step), (mine["wall_time"], mine["step"]))
            if message.WhichOneof("what") == "file_version":
                self.assertEqual(message.file_version, "brain.Event:2")
                continue
            self.assertEqual(message.WhichOneof("what"), "summary")
            self.assertEqual([(v.tag, f32(v.simple_value)) for v in message.summary.value],
                             [(v["tag"], v["simple_value"]) for v in mine["values"]])

    def test_tensorboards_own_loader(self):
        try:
            from tensorboard.backend.event_processing import event_accumulator
        except ImportError:
            self.skipTest("TensorBoard is not installed (Debian 12 does not package it; "
                          "where it is installed by hand, this check runs)")
        history = self.run_training()
        logdir = self.saved_args()["logging_dir"]
        acc = event_accumulator.EventAccumulator(logdir)
        acc.Reload()
        scalars = acc.Tags()["scalars"]
        for entry in history:
            for key, value in entry.items():
                if key == "step":
                    continue
                self.assertIn(tag_of(key), scalars)
                found = [e.value for e in acc.Scalars(tag_of(key)) if e.step == entry["step"]]
                self.assertIn(struct.unpack("<f", f32(value))[0], found, (key, entry["step"]))


if __name__ == "__main__":
    unittest.main()
