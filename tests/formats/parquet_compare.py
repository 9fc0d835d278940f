"""parquet_compare.py DIR: what parquet_write.js left in DIR, read back with
cputrain.Table. Each .parquet must give the table its JSON lines twin gives:
the same column names in the same order, types, and cells (numbers
compared as numbers). Then each file to refuse, and a good file truncated
or with its footer length flipped, must fail with CT_ERR_FORMAT naming the
file. One "ok"/"FAIL" line per check; exit status 1 on any failure."""
import json
import math
import os
import sys

import cputrain
from cputrain import CputrainError, Status

failures = 0


def report(ok, what, why=""):
    global failures
    if not ok:
        failures += 1
    print("%s %s%s" % ("ok" if ok else "FAIL", what, (": " + why) if why and not ok else ""))


def same_value(a, b):
    if isinstance(a, list) or isinstance(b, list):
        return (isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
                and all(same_value(x, y) for x, y in zip(a, b)))
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a is b or a == b and type(a) is type(b)
    if isinstance(a, float) or isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


_json_rows = {}


def rows_of(table, path):
    """Every row as a dict, read once for each JSON lines file."""
    if path not in _json_rows:
        _json_rows[path] = [table[r] for r in range(len(table))]
    return _json_rows[path]


def first_difference(got, want, want_rows):
    if got.column_names != want.column_names:
        return "columns %s, the JSON lines %s" % (got.column_names, want.column_names)
    if got.column_types != want.column_types:
        return "types %s, the JSON lines %s" % (got.column_types, want.column_types)
    if len(got) != len(want):
        return "%d rows, the JSON lines %d" % (len(got), len(want))
    for r in range(len(got)):
        g, w = got[r], want_rows[r]
        for name in got.column_names:
            if not same_value(g[name], w[name]):
                return "row %d, column %r: %r, the JSON lines %r" % (r, name, g[name], w[name])
    return None


def check_pair(folder, pair):
    name = "%s = %s (%s, %d row groups)" % (pair["parquet"], pair["jsonl"], pair["writer"],
                                            pair["row_groups"])
    try:
        got = cputrain.Table(os.path.join(folder, pair["parquet"]))
        want = cputrain.Table(os.path.join(folder, pair["jsonl"]))
    except CputrainError as e:
        report(False, name, str(e))
        return
    why = first_difference(got, want, rows_of(want, pair["jsonl"]))
    if why is None and pair["row_groups"] < 2:
        why = "one row group; the test wants several"
    report(why is None, name, why)


def check_refused(path, expect, what):
    try:
        cputrain.Table(path)
    except CputrainError as e:
        ok = (e.status == Status.ERR_FORMAT and e.message.startswith(path + ":")
              and expect in e.message)
        report(ok, "%s refused: %s" % (what, e.message),
               "%s, the message should name the file and say %r" % (e.status_name, expect))
        return
    report(False, what + " refused", "it loaded")


def damaged_copies(folder, good):
    """A good file cut short, and with its footer length changed."""
    data = open(os.path.join(folder, good), "rb").read()
    footer_at = len(data) - 8
    copies = [("truncated", data[: len(data) // 2], "not end with \"PAR1\""),
              ("truncated, its magic put back", data[: len(data) // 2] + b"PAR1", ""),
              ("footer length flipped high",
               data[:footer_at + 3] + bytes([data[footer_at + 3] ^ 0x80]) + data[footer_at + 4:],
               "footer's length"),
              ("footer length off by one",
               data[:footer_at] + bytes([data[footer_at] ^ 1]) + data[footer_at + 1:], "")]
    for i, (what, content, expect) in enumerate(copies):
        path = os.path.join(folder, "damaged_%d.parquet" % i)
        with open(path, "wb") as f:
            f.write(content)
        yield path, expect, "%s (%s)" % (good, what)


def main():
    folder = sys.argv[1]
    manifest = json.load(open(os.path.join(folder, "manifest.json")))
    print("parquet: written by DuckDB %s and arrow-rs (parquet-wasm)" % manifest["duckdb"])
    for pair in manifest["pairs"]:
        check_pair(folder, pair)
    for refusal in manifest["refusals"]:
        check_refused(os.path.join(folder, refusal["file"]), refusal["expect"], refusal["file"])
    for path, expect, what in damaged_copies(folder, manifest["pairs"][1]["parquet"]):
        check_refused(path, expect, what)
    print("parquet: %d checks failed" % failures if failures else "parquet: all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
