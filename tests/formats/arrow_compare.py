"""arrow_compare.py DIR: the Arrow reader against the JSON reader, on what
arrow_write.js wrote into DIR. Each .arrow (stream and file format) must
load, through cputrain.Table, to the table its .jsonl twin loads to: the
same column names in the same order, the same types, the same cells
(floats compared as numbers, at float32 or float16 precision for columns
stored that narrow). Then the refusals: a truncated stream and file, a
corrupted metadata length, a buffer pointing past the body, and columns of
types a table cannot hold, each CT_ERR_FORMAT naming the file (and the
column). One "ok" or "FAIL" line per check; exit status 1 on any failure.

Run with PYTHONPATH=bindings/python CPUTRAIN_LIBRARY=<the built library>."""
import json
import math
import os
import struct
import sys

from cputrain import CputrainError, Table

failures = passes = 0


def report(ok, what):
    global failures, passes
    failures += not ok
    passes += ok
    print("%s %s" % ("ok  " if ok else "FAIL", what))


def narrow(value, kind):
    fmt = {"float32": "f", "float16": "e"}[kind]
    return struct.unpack(fmt, struct.pack(fmt, value))[0]


def same_value(a, b, kind):
    """a (from the .arrow) equals b (from the .jsonl)."""
    if isinstance(a, list) or isinstance(b, list):
        return (isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
                and all(same_value(x, y, kind) for x, y in zip(a, b)))
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a is b or (type(a) is type(b) and a == b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if type(a) is not type(b):
            return False
        if isinstance(a, float):
            if kind:
                a, b = narrow(a, kind), narrow(b, kind)
            return (math.isnan(a) and math.isnan(b)) or (a == b and
                                                         math.copysign(1, a) == math.copysign(1, b))
        return a == b
    return type(a) is type(b) and a == b


def load(path):
    try:
        return Table(path), None
    except CputrainError as e:
        return None, e


def compare(folder, case, fmt):
    arrow_path = os.path.join(folder, case["files"][fmt])
    jsonl_path = os.path.join(folder, case["jsonl"])
    what = "%s (%s format) reads as %s does" % (case["files"][fmt], fmt, case["jsonl"])
    a, err = load(arrow_path)
    b, err_b = load(jsonl_path)
    if err or err_b:
        return report(False, "%s: %s" % (what, err or err_b))
    if a.column_names != b.column_names:
        return report(False, "%s: columns %s, not %s" % (what, a.column_names, b.column_names))
    if a.column_types != b.column_types:
        return report(False, "%s: types %s, not %s" % (what, a.column_types, b.column_types))
    if len(a) != len(b):
        return report(False, "%s: %d rows, not %d" % (what, len(a), len(b)))
    for r in range(len(a)):
        ra, rb = a[r], b[r]
        for name in a.column_names:
            if not same_value(ra[name], rb[name], case["narrow"].get(name)):
                return report(False, "%s: row %d, column %s: %r, not %r"
                              % (what, r, name, ra[name], rb[name]))
    report(True, "%s: %d rows, %d columns (%s)" % (what, len(a), len(a.column_names),
                                                   ", ".join(a.column_types)))


def refused(path, label, *needles):
    """Loading path fails with CT_ERR_FORMAT and a message naming the file
    and each needle."""
    t, err = load(path)
    if t is not None:
        return report(False, "%s: loaded (%d rows), not refused" % (label, len(t)))
    message = err.message
    ok = err.status_name == "CT_ERR_FORMAT" and path in message and all(n in message for n in needles)
    report(ok, "%s: %s: %s" % (label, err.status_name, message))


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


class FlatBuffer:
    """Just enough FlatBuffers to find a field of a table (the test's own
    reading, to corrupt one number in place)."""

    def __init__(self, data, base):
        self.data, self.base = data, base

    def u32(self, pos):
        return struct.unpack_from("<I", self.data, pos)[0]

    def root(self):
        return self.base + self.u32(self.base)

    def field(self, table, index):
        vtable = table - struct.unpack_from("<i", self.data, table)[0]
        size = struct.unpack_from("<H", self.data, vtable)[0]
        slot = 4 + 2 * index
        off = struct.unpack_from("<H", self.data, vtable + slot)[0] if slot < size else 0
        return table + off if off else None

    def follow(self, pos):
        return pos + self.u32(pos)


def messages(data):
    """(start, metadata start, metadata length, body start) of each message
    of a stream with continuation words."""
    pos = 0
    while pos + 8 <= len(data):
        marker, length = struct.unpack_from("<Ii", data, pos)
        if marker != 0xFFFFFFFF or length == 0:
            return
        meta = pos + 8
        fb = FlatBuffer(data, meta)
        at = fb.field(fb.root(), 3)  # bodyLength, absent when 0
        body_len = struct.unpack_from("<q", data, at)[0] if at else 0
        yield pos, meta, length, meta + length
        pos = meta + length + body_len


def read(folder, name):
    with open(os.path.join(folder, name), "rb") as f:
        return f.read()


def with_stream_schema(file_data, stream_data):
    """An IPC file as pyarrow writes it, its stream starting with a schema
    (the JavaScript writer leaves it out): stream_data's first message put
    after the magic, and the footer's blocks moved past it."""
    _, meta, length, body = next(messages(stream_data))
    schema = stream_data[:body]  # a schema message has no body
    footer_len = struct.unpack_from("<i", file_data, len(file_data) - 10)[0]
    out = bytearray(file_data[:8] + schema + file_data[8:])
    footer = len(out) - 10 - footer_len
    fb = FlatBuffer(out, footer)
    for slot in (2, 3):  # dictionaries, recordBatches
        at = fb.field(fb.root(), slot)
        if at:
            blocks = fb.follow(at)
            for k in range(fb.u32(blocks)):
                pos = blocks + 4 + 24 * k
                struct.pack_into("<q", out, pos, struct.unpack_from("<q", out, pos)[0] + len(schema))
    return bytes(out)


def stream_schema(folder, case):
    """The file format with the stream's own schema, which must agree with
    the footer's."""
    path = os.path.join(folder, "pyarrow_like.file.arrow")
    write(path, with_stream_schema(read(folder, case["files"]["file"]),
                                   read(folder, case["files"]["stream"])))
    compare(folder, dict(case, files={"file": os.path.basename(path)}), "file")
    path = os.path.join(folder, "other_schema.file.arrow")
    write(path, with_stream_schema(read(folder, case["files"]["file"]),
                                   read(folder, "glue_single.arrow")))
    refused(path, "a file whose stream's schema is not its footer's is refused", "differ")


def corruptions(folder):
    source = os.path.join(folder, "squad.arrow")
    with open(source, "rb") as f:
        data = f.read()
    path = os.path.join(folder, "truncated.arrow")
    write(path, data[: len(data) // 2 + 3])
    refused(path, "a stream cut in the middle of a record batch is refused", "past the end")
    with open(os.path.join(folder, "squad.file.arrow"), "rb") as f:
        file_data = f.read()
    path = os.path.join(folder, "truncated.file.arrow")
    write(path, file_data[:-100])
    refused(path, "an IPC file cut short is refused", "ARROW1")

    bad = bytearray(data)
    struct.pack_into("<i", bad, 4, 0x7FFFFFF0)
    path = os.path.join(folder, "bad_length.arrow")
    write(path, bytes(bad))
    refused(path, "a corrupted metadata length is refused", "metadata")

    # the first record batch's first buffer moved past its body
    msgs = list(messages(data))
    start, meta, length, body = msgs[1]
    fb = FlatBuffer(data, meta)
    batch = fb.follow(fb.field(fb.root(), 2))
    buffers = fb.follow(fb.field(batch, 2))
    count = fb.u32(buffers)
    bad = bytearray(data)
    # the last buffer (the answer_start items' values), offset past the body
    struct.pack_into("<q", bad, buffers + 4 + 16 * (count - 1), 1 << 40)
    path = os.path.join(folder, "bad_buffer.arrow")
    write(path, bytes(bad))
    refused(path, "a buffer pointing past the body is refused", "record batch 0",
            "answers.answer_start", "outside the message body")

    # offsets that decrease: the context column's offsets (buffer 7: id's
    # validity, offsets, data; title's; then context's validity, offsets)
    offsets_at = struct.unpack_from("<q", data, buffers + 4 + 16 * 7)[0]
    bad = bytearray(data)
    struct.pack_into("<i", bad, body + offsets_at + 4 * 3, 0x7FFFFFF)
    path = os.path.join(folder, "bad_offsets.arrow")
    write(path, bytes(bad))
    refused(path, "offsets that decrease are refused, naming the column and row",
            "column 'context'", "offsets decrease at row 3")


def special(folder, name):
    """Floats JSON cannot hold, and integers the JSON reader types as
    floats: int64's extremes are INT; uint64 past int64 is FLOAT."""
    path = os.path.join(folder, name)
    t, err = load(path)
    if err:
        return report(False, "%s: %s" % (name, err))
    got = [t[r] for r in range(len(t))]
    floats = [math.nan, math.inf, -math.inf, -0.0]
    i64 = [-2**63, 2**63 - 1, 0, -1]
    u64 = [float(2**64 - 1), float(2**63), 2**63 - 1, 0]
    ok = t.column_types == ["float", "float", "int", "float"] and all(
        same_value(row["d"], f, None) and same_value(row["s"], f, None) and
        same_value(row["i64"], i, None) and same_value(row["u64"], u, None)
        for row, f, i, u in zip(got, floats, i64, u64))
    report(ok, "%s: NaN, inf, -inf, -0.0 (double, float32), int64 and uint64 extremes: %r"
           % (name, [tuple(row.values()) for row in got]))


def main():
    folder = sys.argv[1]
    with open(os.path.join(folder, "cases.json"), encoding="utf-8") as f:
        plan = json.load(f)
    print("arrow: files written by apache-arrow %s (npm)%s" % (
        plan["arrow"], ", ZSTD by @bokuweb/zstd-wasm %s" % plan["zstd"] if plan["zstd"] else
        "; no ZSTD encoder installed: the compressed case is skipped"))
    for case in plan["cases"]:
        for fmt in sorted(case["files"], reverse=True):
            compare(folder, case, fmt)
    special(folder, plan["special"])
    for r in plan["refusals"]:
        refused(os.path.join(folder, r["file"]), "%s is refused by name" % r["what"], *r["expect"])
    stream_schema(folder, next(c for c in plan["cases"] if c["name"] == "squad"))
    corruptions(folder)
    print("arrow: %d passed, %d failed" % (passes, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
