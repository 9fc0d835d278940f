"""Ctrl-C during Trainer.train() and the prediction API (issue 12, items 6
and 8): a SIGINT delivered while training (from a callback, or from another
thread with no callback at all) stops at the next step with a checkpoint
that resumes to the uninterrupted run's parameters, raises
KeyboardInterrupt, and puts the previous handler back; a second one stops
without the save; Trainer.cancel() from another thread does the same with
CputrainError; Trainer.predict() is the model in eval mode;
Dataset.labels() is what was added; the evaluation callback runs without
dropout."""

import os
import shutil
import signal
import threading
import time
import unittest
from unittest import mock

from cputrain import (CputrainError, Dataset, Event, Model, Status, Task, Trainer,
                      TrainingArgs)

from helpers import T, TempDirTest, params_bytes, qa_dataset


def complete(directory):
    return os.path.exists(os.path.join(directory, "cputrain_checkpoint_complete"))


class Sentinel:
    """A SIGINT handler of the caller's, to see it put back (and not run)."""

    def __init__(self):
        self.calls = 0

    def __call__(self, signum, frame):
        self.calls += 1


class InterruptTest(TempDirTest):

    prefix = "cputrain-interrupt-"

    def setUp(self):
        super().setUp()
        self.sentinel = Sentinel()
        self.before = signal.signal(signal.SIGINT, self.sentinel)
        self.addCleanup(signal.signal, signal.SIGINT, self.before)

    def trainer(self, out, progress=None, **kw):
        # bert-test has dropout: resuming must put its generator back too
        model = Model.create("bert-test", seed=1)
        self.addCleanup(model.close)
        fields = dict(output_dir=os.path.join(self.dir, out), per_device_train_batch_size=4,
                      num_train_epochs=2.0, learning_rate=1e-3, logging_steps=2, save_steps=5,
                      seed=11)
        fields.update(kw)
        args = TrainingArgs(**fields)
        self.addCleanup(args.close)
        dataset = qa_dataset()
        self.addCleanup(dataset.close)
        trainer = Trainer(model, args, train_dataset=dataset, progress=progress)
        self.addCleanup(trainer.close)
        return trainer

    def uninterrupted(self):
        trainer = self.trainer("full")
        self.assertEqual(trainer.train().global_step, 12)
        return params_bytes(trainer.model)

    def test_sigint_from_a_callback_saves_and_resumes_exactly(self):
        full = self.uninterrupted()
        sent = []

        def progress(event, step, *rest):
            if event == Event.STEP_END and step == 2:
                sent.append(step)
                os.kill(os.getpid(), signal.SIGINT)

        trainer = self.trainer("cut", progress)
        with mock.patch("sys.unraisablehook") as hook, \
                self.assertRaises(KeyboardInterrupt) as cm:
            trainer.train()
        hook.assert_not_called()  # no "Exception ignored" from ctypes
        step = trainer.global_step
        self.assertEqual(sent, [2])
        self.assertIn(step, (2, 3), "stopped within one step of the interrupt")
        self.assertIn("checkpoint saved to", str(cm.exception))
        checkpoint = os.path.join(self.dir, "cut", "checkpoint-%d" % step)
        self.assertIn(checkpoint, str(cm.exception))
        self.assertTrue(complete(checkpoint))
        self.assertFalse(os.path.exists(os.path.join(self.dir, "cut", "model.safetensors")))
        self.assertIs(signal.getsignal(signal.SIGINT), self.sentinel, "handler put back")
        self.assertEqual(self.sentinel.calls, 0)
        trainer.set_progress_callback(None)
        self.assertEqual(trainer.train(resume_from_checkpoint=True).global_step, 12)
        self.assertEqual(params_bytes(trainer.model), full, "resumed run differs")

    def test_sigint_from_another_thread_without_callbacks(self):
        # Each save pauses (the library's test hook), so the run is still
        # going when checkpoint-5 appears; the thread then interrupts it.
        out = os.path.join(self.dir, "thread")
        trainer = self.trainer("thread")
        done = threading.Event()

        def interrupt():
            while not done.is_set() and not os.path.exists(os.path.join(out, "checkpoint-5")):
                time.sleep(0.01)
            if not done.is_set():
                os.kill(os.getpid(), signal.SIGINT)

        thread = threading.Thread(target=interrupt)
        with mock.patch.dict(os.environ, {"CPUTRAIN_TEST_CHECKPOINT_PAUSE_MS": "100"}):
            thread.start()
            try:
                with self.assertRaises(KeyboardInterrupt):
                    trainer.train()
            finally:
                done.set()
                thread.join()
        step = trainer.global_step
        self.assertTrue(5 <= step < 12, step)
        self.assertTrue(complete(os.path.join(out, "checkpoint-%d" % step)))
        self.assertIs(signal.getsignal(signal.SIGINT), self.sentinel)

    def test_second_sigint_stops_without_saving(self):
        def progress(event, step, *rest):
            if event == Event.STEP_END and step == 2:
                os.kill(os.getpid(), signal.SIGINT)
                os.kill(os.getpid(), signal.SIGINT)

        trainer = self.trainer("twice", progress)
        with self.assertRaises(KeyboardInterrupt):
            trainer.train()
        self.assertEqual(trainer.global_step, 2)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "twice", "checkpoint-2")))
        self.assertIs(signal.getsignal(signal.SIGINT), self.sentinel)

    def test_cancel_from_another_thread(self):
        out = os.path.join(self.dir, "cancel")
        trainer = self.trainer("cancel")
        done = threading.Event()

        def cancel():
            while not done.is_set() and not os.path.exists(os.path.join(out, "checkpoint-5")):
                time.sleep(0.01)
            trainer.cancel()

        thread = threading.Thread(target=cancel)
        with mock.patch.dict(os.environ, {"CPUTRAIN_TEST_CHECKPOINT_PAUSE_MS": "100"}):
            thread.start()
            try:
                with self.assertRaises(CputrainError) as cm:
                    trainer.train()
            finally:
                done.set()
                thread.join()
        self.assertEqual(cm.exception.status, Status.ERR_CANCELLED)
        step = trainer.global_step
        self.assertIn("after step %d of 12; checkpoint saved to" % step, cm.exception.message)
        self.assertTrue(5 <= step < 12 and complete(os.path.join(out, "checkpoint-%d" % step)))

    def test_handler_restored_after_an_error_and_untouched_in_a_thread(self):
        trainer = self.trainer("err", max_steps=2)
        os.makedirs(os.path.join(self.dir, "err", "checkpoint-9"))  # an earlier run's
        with self.assertRaisesRegex(Exception, "already holds checkpoint-9"):
            trainer.train()
        self.assertIs(signal.getsignal(signal.SIGINT), self.sentinel)
        seen = []

        def in_thread():
            seen.append(signal.getsignal(signal.SIGINT))
            trainer.train(resume_from_checkpoint=False)

        shutil.rmtree(os.path.join(self.dir, "err"))
        thread = threading.Thread(target=in_thread)
        thread.start()
        thread.join()
        self.assertEqual(trainer.global_step, 2)
        self.assertIs(seen[0], self.sentinel)
        self.assertIs(signal.getsignal(signal.SIGINT), self.sentinel)


class PredictTest(TempDirTest):

    prefix = "cputrain-predict-"

    def test_labels_are_what_was_added(self):
        with Dataset("question-answering", 4) as ds:
            ds.add([2, 5, 6, 3], (1, 2))
            ds.add([2, 7, 8, 3], (2, 2))
            self.assertEqual(ds.labels().tolist(), [[1, 2], [2, 2]])
            self.assertEqual(ds.labels(1).tolist(), [[2, 2]])
            self.assertEqual(ds.labels(2).tolist(), [])
            with self.assertRaisesRegex(IndexError, "outside the dataset's 2 examples"):
                ds.labels(1, 3)
        with Dataset("sequence-classification", 3) as ds:
            ds.add([1, 2, 3], 4)
            ds.add([1, 2, 3], 0)
            self.assertEqual(ds.labels().tolist(), [4, 0])
        with Dataset(Task.MASKED_LM, 3) as ds:
            ds.add([5, 6, 7], [-100, 6, -100])
            self.assertEqual(ds.labels().tolist(), [[-100, 6, -100]])

    def test_predict_is_the_model_in_eval_mode(self):
        model = Model.create("bert-test", seed=1)  # with dropout
        self.addCleanup(model.close)
        ds = qa_dataset(7)
        self.addCleanup(ds.close)
        args = TrainingArgs(output_dir=self.dir, per_device_eval_batch_size=7)
        self.addCleanup(args.close)
        trainer = Trainer(model, args)
        self.addCleanup(trainer.close)
        self.assertTrue(model.training)
        first = trainer.predict(ds)
        second = trainer.predict(ds)
        self.assertTrue(model.training, "the mode is put back")
        self.assertEqual(tuple(first.shape), (7, T, 2))
        self.assertEqual(bytes(memoryview(first).cast("B")), bytes(memoryview(second).cast("B")))
        model.training = False
        model.forward(ds.batch(range(7)))
        direct = model.logits(copy=True)
        self.assertEqual(bytes(memoryview(first).cast("B")), bytes(memoryview(direct).cast("B")))
        with Dataset("sequence-classification", T) as other, \
                self.assertRaisesRegex(ValueError, "the dataset is for sequence_classification"):
            trainer.predict(other)

    def test_eval_callback_runs_without_dropout(self):
        model = Model.create("bert-test", seed=1)
        self.addCleanup(model.close)
        ds = qa_dataset()
        self.addCleanup(ds.close)
        seen = []

        def evaluate(trainer):
            a = trainer.predict(ds)
            model.forward(ds.batch([0, 1]))
            b = model.logits(copy=True)
            model.forward(ds.batch([0, 1]))
            c = model.logits(copy=True)
            seen.append((model.training, bytes(memoryview(b).cast("B")) ==
                         bytes(memoryview(c).cast("B"))))
            return {"eval_first_logit": float(a[0, 0, 0])}

        args = TrainingArgs(output_dir=self.dir, per_device_train_batch_size=4, max_steps=2,
                            eval_strategy="steps", eval_steps=1, save_strategy="no")
        self.addCleanup(args.close)
        trainer = Trainer(model, args, train_dataset=ds, evaluate=evaluate)
        self.addCleanup(trainer.close)
        trainer.train()
        self.assertEqual(seen, [(False, True), (False, True)])
        self.assertTrue(model.training)


if __name__ == "__main__":
    unittest.main()
