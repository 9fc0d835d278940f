"""ct_table (cputrain.Table) against the readers the datasets library uses:
pandas.read_csv (Debian's python3-pandas) for CSV on random files written
by Python's csv module (quotes, separators and line breaks inside fields,
NA words, numbers, booleans, text), and Python's json for JSON lines and
lists; and the refusals with their file, line and column."""

import csv
import io
import json
import math
import os
import random
import shutil
import tempfile
import unittest

from cputrain import CputrainError, Status, Table

try:
    import pandas
except ImportError:
    pandas = None

# pandas 2 added "None" to its NA words, as the library has it; 1.5 is told.
NA_WORDS = ["NA", "nan", "NaN", "null", "NULL", "N/A", "n/a", "#N/A", "<NA>", "None", ""]
KIND = {"int64": "int", "float64": "float", "bool": "bool"}


def random_field(rng, kind):
    if rng.random() < 0.1:
        return rng.choice(NA_WORDS)
    if kind == "int":
        return str(rng.randrange(-10**6, 10**6))
    if kind == "float":
        return rng.choice(["%.3f" % rng.uniform(-5, 5), "1e-3", "-2.5E2", str(rng.randrange(9))])
    if kind == "bool":
        return rng.choice(["True", "false", "TRUE", "False"])
    return "".join(rng.choice(["a", "b", " ", ",", '"', "\n", "\u00e9", "\u4e2d", "1", "x"])
                   for _ in range(rng.randrange(1, 12)))


class CsvAgainstPandasTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="cputrain-table-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        return path

    @unittest.skipIf(pandas is None, "python3-pandas is not installed")
    def test_random_files_read_as_pandas_reads_them(self):
        rng = random.Random(7)
        for trial in range(300):
            kinds = [rng.choice(["int", "float", "bool", "text"]) for _ in range(rng.randrange(1, 5))]
            names = ["c%d" % k for k in range(len(kinds))]
            buf = io.StringIO()
            writer = csv.writer(buf, quoting=rng.choice([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]),
                                lineterminator=rng.choice(["\n", "\r\n"]))
            writer.writerow(names)
            for _ in range(rng.randrange(1, 15)):
                writer.writerow([random_field(rng, k) for k in kinds])
            path = self.write("t%d.csv" % trial, buf.getvalue())
            want = pandas.read_csv(path, na_values=["None"])
            with self.subTest(trial=trial, text=buf.getvalue()), Table(path) as t:
                self.assertEqual(t.column_names, list(want.columns))
                self.assertEqual(len(t), len(want))
                for name, kind in zip(t.column_names, t.column_types):
                    dtype = str(want[name].dtype)
                    values = list(want[name])
                    if dtype == "object" and all(isinstance(v, bool) or v != v for v in values) \
                            and any(isinstance(v, bool) for v in values):
                        dtype = "bool"  # booleans with NaN: an object column of bools
                    self.assertEqual(kind, KIND.get(dtype, "string" if values and any(
                        v == v for v in values) else "null"), (name, dtype))
                    for row, v in enumerate(values):
                        got = t[row][name]
                        if isinstance(v, float) and math.isnan(v):
                            self.assertIsNone(got, (name, row))
                        elif kind == "float":
                            self.assertAlmostEqual(float(got), v, places=12)
                        else:
                            self.assertEqual(got, v.item() if hasattr(v, "item") else v,
                                             (name, row))

    def test_header_rules_and_refusals(self):
        path = self.write("h.csv", "a,,a\n1,2,3\n\n4,5\n")
        with Table(path) as t:
            self.assertEqual(t.column_names, ["a", "Unnamed: 1", "a.1"])
            self.assertEqual(len(t), 2)  # the empty line is skipped
            self.assertEqual(t[1], {"a": 4, "Unnamed: 1": 5.0, "a.1": None})
            self.assertEqual(t.column_types, ["int", "int", "float"])
        for text, needle in (("a,b\n1,2,3\n", "line 2: more fields than the header's 2"),
                             ('a\n"open\n', "line 2: a quoted field is not closed")):
            with self.subTest(text=text), self.assertRaises(CputrainError) as cm:
                Table(self.write("bad.csv", text))
            self.assertEqual(cm.exception.status, Status.ERR_FORMAT)
            self.assertIn(needle, cm.exception.message)
        with self.assertRaises(CputrainError) as cm:
            Table(self.write("x.tsv", "a\n"))
        self.assertIn(".csv, .json, .jsonl, .parquet or .arrow", cm.exception.message)


class JsonTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="cputrain-table-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def test_lines_and_lists_read_as_json_reads_them(self):
        records = [{"tokens": ["EU", "rejects", "\u00e9"], "ner_tags": [3, 0, 0], "id": "0"},
                   {"tokens": [], "ner_tags": [], "id": "1", "score": 0.5},
                   {"id": "2", "score": 2, "tokens": ["a\u0000b"], "ner_tags": [1]}]
        lines = "\n".join(json.dumps(r) for r in records) + "\n\n"
        for name, text in (("a.jsonl", lines), ("b.json", json.dumps(records))):
            with self.subTest(name=name), Table(self.write(name, text)) as t:
                self.assertEqual(t.column_names, ["tokens", "ner_tags", "id", "score"])
                self.assertEqual(t.column_types, ["list", "list", "string", "float"])
                for row, r in enumerate(records):
                    self.assertEqual(t[row], {k: r.get(k) for k in t.column_names})

    def test_refusals_name_the_line(self):
        for text, needle in (('{"a": 1}\n{"a": \n', "line 2 column"),
                             ('{"a": 1}\n[1]\n', "line 2: record 1 is an array, not an object"),
                             ('{"a": [[1]]}\n', "\"a\"[0] is an array; a list must hold scalars"),
                             ('{"a": 1}\n{"a": "x"}\n', "column \"a\" mixes types")):
            with self.subTest(text=text), self.assertRaises(CputrainError) as cm:
                Table(self.write("bad.jsonl", text))
            self.assertEqual(cm.exception.status, Status.ERR_FORMAT)
            self.assertIn(needle, cm.exception.message)


if __name__ == "__main__":
    unittest.main()
