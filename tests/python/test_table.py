"""ct_table (cputrain.Table) against the readers the datasets library uses:
pandas.read_csv (Debian's python3-pandas) for CSV on random files written
by Python's csv module (quotes, separators and line breaks inside fields,
NA words, numbers with spaces around them, booleans in any case, text),
header names made unique as pandas makes them, thousands of columns, and
Python's json for JSON lines and lists; and the refusals with their file,
line and column."""

import ctypes
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
from cputrain._lib import lib

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
    if kind == "int":  # pandas reads " 7", "+7" and "007" as 7
        return "%s%s%s%d%s" % (rng.choice(["", " "]), rng.choice(["", "+", "-"]),
                               rng.choice(["", "00"]), rng.randrange(10**6),
                               rng.choice(["", " ", "\t"]))
    if kind == "float":
        return rng.choice(["%.3f" % rng.uniform(-5, 5), "1e-3", "-2.5E2", str(rng.randrange(9)),
                           " 1.5 "])
    if kind == "bool":
        return rng.choice(["True", "false", "TRUE", "False", "tRuE", "fALSE"])
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

    @unittest.skipIf(pandas is None, "python3-pandas is not installed")
    def test_repeated_names_renamed_as_pandas_renames_them(self):
        """pandas numbers a repeated name past every name the header holds
        (a,a,a.1 is a, a.2, a.1), the names the file gives before the
        "Unnamed: k" ones; an empty line, or one of spaces, is skipped."""
        rng = random.Random(3)
        pool = ["a", "a.1", "a.2", "a.1.1", "", "Unnamed: 1", "Unnamed: 1.1", "Unnamed: 0",
                "b", "b.1", "x" * 1500, "x" * 1500 + ".1"]
        headers = [["a", "a", "a.1"], ["a.1", "a", "a"], ["Unnamed: 1", "", ""],
                   ["x", "", "Unnamed: 1"]]
        headers += [[rng.choice(pool) for _ in range(rng.randrange(1, 9))] for _ in range(300)]
        for names in headers:
            path = self.write("h.csv", " \n" + ",".join(names) + "\n\t\n" +
                              ",".join("1" * len(names)) + "\n")
            want = pandas.read_csv(path)
            with self.subTest(names=names), Table(path) as t:
                self.assertEqual(t.column_names, list(want.columns))
                self.assertEqual(len(t), len(want))  # 0 when the header is one empty name

    def test_many_columns(self):
        """20000 columns, half of them one repeated name: each named as pandas
        names it and found by its name (the reader's costs grow as n log n at
        most; the test asserts what is read, not how fast)."""
        n = 10000
        names = ["x"] * n + ["c%d" % k for k in range(n)]
        path = self.write("wide.csv", ",".join(names) + "\n" + ",".join(
            str(k) for k in range(2 * n)) + "\n")
        want = ["x"] + ["x.%d" % k for k in range(1, n)] + names[n:]
        with Table(path) as t:
            self.assertEqual(t.column_names, want)
            self.assertEqual(t[0]["x.9999"], 9999)
            self.assertEqual(t[0]["c9999"], 2 * n - 1)
            index = ctypes.c_size_t()
            for k in (0, 1, n - 1, n, 2 * n - 1):
                self.assertEqual(lib.ct_table_column_index(t._live(), want[k].encode(),
                                                           ctypes.byref(index)), 0)
                self.assertEqual(index.value, k)
            self.assertEqual(lib.ct_table_column_index(t._live(), b"x.10000",
                                                       ctypes.byref(index)), Status.ERR_NOT_FOUND)

    def test_not_utf8_refused_naming_row_and_column(self):
        """pandas decodes every field as UTF-8 and refuses the file on a byte
        that is not: so does the reader, naming the line, row and column
        (not later, when the value reaches config.json)."""
        for data, needle in ((b"text,label\nok,pos\nfine,ne\xffg\n",
                              'line 3: row 1, column "label": the value is not UTF-8'),
                             (b"text,label\nok,\"a\nb\xc0\xaf\"\n",
                              'line 2: row 0, column "label": the value is not UTF-8 '
                              '(at byte 3: overlong'),
                             (b"text,lab\xedel\nok,1\n", "line 1: header field 1 is not UTF-8")):
            path = os.path.join(self.dir, "bad.csv")
            with open(path, "wb") as f:
                f.write(data)
            with self.subTest(data=data), self.assertRaises(CputrainError) as cm:
                Table(path)
            self.assertEqual(cm.exception.status, Status.ERR_FORMAT)
            self.assertIn(path + ": " + needle, cm.exception.message)


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
                             ('{"a": 1}\n{"a": "x"}\n', "column \"a\" mixes types"),
                             # pyarrow finds no list type for these, and datasets refuses them
                             ('{"a": [1, "1"]}\n', "column \"a\" mixes types in its lists: "
                              "record 0 item 0 is a number, record 0 item 1 a string"),
                             ('{"a": [true]}\n{"a": [null, 0.5]}\n', "record 0 item 0 is a "
                              "boolean, record 1 item 1 a number"),
                             ('{"a\\u0000b": 1}\n', "line 1: record 0: key \"a\\u0000...\" "
                              "holds a NUL character")):
            with self.subTest(text=text), self.assertRaises(CputrainError) as cm:
                Table(self.write("bad.jsonl", text))
            self.assertEqual(cm.exception.status, Status.ERR_FORMAT)
            self.assertIn(needle, cm.exception.message)


if __name__ == "__main__":
    unittest.main()
