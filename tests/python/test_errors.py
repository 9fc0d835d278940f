"""Status and CputrainError: names from the library, the thread's error
text read right after the failing call."""

import pickle
import threading
import unittest

from cputrain import CputrainError, Status, TrainingArgs
from cputrain._errors import check
from cputrain._lib import lib


class StatusTest(unittest.TestCase):

    def test_members_mirror_the_library(self):
        self.assertEqual(Status.OK, 0)
        self.assertGreater(len(Status), 5)
        for status in Status:
            self.assertEqual("CT_" + status.name, lib.ct_status_name(status).decode())
            self.assertEqual(status.c_name, "CT_" + status.name)
            self.assertTrue(status.description)
        self.assertEqual(Status.ERR_FORMAT.c_name, "CT_ERR_FORMAT")
        # pinned values, read from the library (issue 10 added ERR_BUSY)
        self.assertEqual(int(Status.ERR_NUMERIC), 9)
        self.assertEqual(int(Status.ERR_BUSY), 12)

    def test_values_are_contiguous_from_zero(self):
        self.assertEqual([int(s) for s in Status], list(range(len(Status))))
        self.assertEqual(lib.ct_status_name(len(Status)), b"CT_UNKNOWN_STATUS")


class CputrainErrorTest(unittest.TestCase):

    def failing_call(self):
        with TrainingArgs() as args:
            try:
                args.set("learning_rate", "fast")
            except CputrainError as e:
                return e
        self.fail("no error raised")

    def test_attributes(self):
        e = self.failing_call()
        self.assertIs(e.status, Status.ERR_INVALID_ARG)
        self.assertEqual(e.status_name, "CT_ERR_INVALID_ARG")
        self.assertIn("learning_rate", e.message)
        self.assertEqual(str(e), "CT_ERR_INVALID_ARG: " + e.message)
        self.assertIsInstance(e, Exception)

    def test_check_passes_ok_and_raises_otherwise(self):
        self.assertIsNone(check(0))
        with self.assertRaises(CputrainError) as cm:
            check(lib.ct_args_create(None))  # a NULL out pointer
        self.assertEqual(cm.exception.status, Status.ERR_INVALID_ARG)
        self.assertIn("out", cm.exception.message)

    def test_status_unknown_to_the_package_keeps_its_number(self):
        e = CputrainError(999, "from the future")
        self.assertEqual(e.status, 999)
        self.assertEqual(e.status_name, "CT_UNKNOWN_STATUS")

    def test_pickles(self):
        e = pickle.loads(pickle.dumps(self.failing_call()))
        self.assertEqual(e.status, Status.ERR_INVALID_ARG)
        self.assertIn("learning_rate", e.message)

    def test_error_text_belongs_to_the_failing_thread(self):
        # A failure on another thread must not replace this thread's text.
        with TrainingArgs() as args:
            with self.assertRaises(CputrainError):
                args.set("seed", "not-a-number")
            mine = lib.ct_last_error()
            theirs = []

            def fail_elsewhere():
                try:
                    args.set("no_such_field_xyz", "1")
                except CputrainError as e:
                    theirs.append(e)

            thread = threading.Thread(target=fail_elsewhere)
            thread.start()
            thread.join()
            self.assertEqual(lib.ct_last_error(), mine)
            self.assertEqual(theirs[0].status, Status.ERR_NOT_FOUND)
            self.assertIn("no_such_field_xyz", theirs[0].message)


if __name__ == "__main__":
    unittest.main()
