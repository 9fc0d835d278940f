"""What several test modules share: numpy when it is installed, a small
question-answering data set that is the same on every run, a model's
parameters as bytes (to compare runs exactly), and a TestCase with a
temporary folder of its own. Not a test module: discover skips it."""

import shutil
import tempfile
import unittest

from cputrain import Dataset

try:
    import numpy as np
except ImportError:
    np = None

needs_numpy = unittest.skipIf(np is None, "numpy is not installed")

N, T = 24, 12  # qa_examples: how many rows by default, of how many ids


def qa_examples(n=N, seed=0):
    """(input_ids, positions) as nested lists, so no numpy is needed: n rows
    of T ids (n = N by default) from a linear congruential generator, each with an answer span
    near its start."""
    state = seed * 7919 + 17
    ids, positions = [], []
    for _ in range(n):
        row = []
        for _ in range(T):
            state = (state * 1103515245 + 12345) % (1 << 31)
            row.append(1 + state % 127)
        ids.append(row)
        start = row[0] % (T - 2)
        positions.append([start, start + row[1] % 2])
    return ids, positions


def qa_dataset(n=N, seed=0):
    ids, positions = qa_examples(n, seed)
    return Dataset.from_arrays("question-answering", ids, positions)


def params_bytes(model):
    return {name: bytes(memoryview(view).cast("B")) for name, view in model.parameters().items()}


class TempDirTest(unittest.TestCase):
    """self.dir: a new folder for each test, removed after it (also when
    setUp of a subclass fails after calling this one)."""

    prefix = "cputrain-"

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=self.prefix)
        self.addCleanup(shutil.rmtree, self.dir, True)
