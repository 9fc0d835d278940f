"""Log messages from the library: the default route into `logging`, a
Python callback, the library's stderr writer, levels. The message used is
the deprecation warning for --no_cuda, which Transformers also logs."""

import logging
import os
import subprocess
import sys
import unittest
from unittest import mock

import cputrain
from cputrain import LogLevel, TrainingArgs


def trigger_warning():
    with TrainingArgs() as args:
        args.parse(["--no_cuda"])


class LogTest(unittest.TestCase):

    def setUp(self):
        if TrainingArgs._field("no_cuda") is None:
            self.skipTest("the library has no deprecated no_cuda alias to warn about")
        self.addCleanup(cputrain.set_log_level, cputrain.get_log_level())
        self.addCleanup(cputrain.set_log_callback, cputrain.log_to_python_logging)

    def capture(self):
        received = []
        cputrain.set_log_callback(lambda level, message: received.append((level, message)))
        return received

    def test_default_goes_to_the_cputrain_logger(self):
        with self.assertLogs("cputrain", logging.WARNING) as logs:
            trigger_warning()
        self.assertEqual(logs.records[0].levelno, logging.WARNING)
        self.assertIn("no_cuda", logs.records[0].getMessage())

    def test_python_callback_receives_level_and_text(self):
        received = self.capture()
        trigger_warning()
        self.assertEqual(len(received), 1, received)
        level, message = received[0]
        self.assertIs(level, LogLevel.WARNING)
        self.assertIsInstance(message, str)
        self.assertIn("no_cuda", message)
        self.assertFalse(message.endswith("\n"))

    def test_level_filters_in_the_library(self):
        received = self.capture()
        cputrain.set_log_level(LogLevel.ERROR)
        trigger_warning()
        cputrain.set_log_level("off")
        trigger_warning()
        self.assertEqual(received, [])
        cputrain.set_log_level("debug")
        trigger_warning()
        self.assertEqual(len(received), 1)

    def test_none_silences_the_library(self):
        received = self.capture()
        cputrain.set_log_callback(None)
        with mock.patch.object(cputrain._log.logger, "handle") as handle:
            trigger_warning()
        self.assertEqual(received, [])
        handle.assert_not_called()

    def test_exception_in_callback_does_not_cross_into_c(self):
        def broken(level, message):
            raise RuntimeError("callback bug")
        cputrain.set_log_callback(broken)
        with mock.patch("sys.unraisablehook") as hook:
            trigger_warning()  # returns normally
        self.assertTrue(hook.called)
        self.assertIsInstance(hook.call_args[0][0].exc_value, RuntimeError)

    def test_not_callable_is_a_type_error(self):
        with self.assertRaises(TypeError):
            cputrain.set_log_callback("stderr")

    def test_library_stderr_writer(self):
        # In a child process, so the C library's stderr can be captured.
        package_dir = os.path.dirname(os.path.dirname(cputrain.__file__))
        env = dict(os.environ, PYTHONPATH=package_dir, CPUTRAIN_LIBRARY=cputrain.library_path)
        code = ("import cputrain; cputrain.set_log_callback(cputrain.LOG_TO_STDERR); "
                "a = cputrain.TrainingArgs(); a.parse(['--no_cuda'])")
        result = subprocess.run([sys.executable, "-c", code], env=env,
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stderr, r"cputrain: warning: .*no_cuda")


class LevelTest(unittest.TestCase):

    def setUp(self):
        self.addCleanup(cputrain.set_log_level, cputrain.get_log_level())

    def test_levels_mirror_the_library(self):
        self.assertEqual([m.name for m in LogLevel], ["OFF", "ERROR", "WARNING", "INFO", "DEBUG"])
        for level in LogLevel:
            if level:
                self.assertEqual(cputrain._lib.lib.ct_log_level_name(level).decode(),
                                 level.name.lower())

    def test_set_and_get(self):
        for level in LogLevel:
            cputrain.set_log_level(level)
            self.assertIs(cputrain.get_log_level(), level)
        cputrain.set_log_level("Info")
        self.assertIs(cputrain.get_log_level(), LogLevel.INFO)

    def test_unknown_levels_are_refused(self):
        with self.assertRaises(ValueError):
            cputrain.set_log_level("verbose")
        with self.assertRaises(ValueError):
            cputrain.set_log_level(17)

    def test_python_logging_mapping(self):
        for level, expected in [(LogLevel.ERROR, logging.ERROR), (LogLevel.WARNING, logging.WARNING),
                                (LogLevel.INFO, logging.INFO), (LogLevel.DEBUG, logging.DEBUG)]:
            with self.assertLogs("cputrain", logging.DEBUG) as logs:
                cputrain.log_to_python_logging(level, "m")
            self.assertEqual(logs.records[0].levelno, expected)


if __name__ == "__main__":
    unittest.main()
