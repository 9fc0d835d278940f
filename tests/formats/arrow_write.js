// The independent writer of the Arrow reader's test: Apache Arrow's own
// JavaScript implementation (npm apache-arrow) writes random rows of the
// schemas the datasets library caches (SQuAD, GLUE, STS-B, CoNLL-2003,
// and one of every type the reader decodes) as IPC streams, as the
// datasets cache holds them, and as IPC files; the same JS objects are
// written as JSON lines, struct columns flattened to "parent.child" keys,
// the file ct_table_load must read to the same table.
//
// usage: NODE_PATH=<node_modules> node arrow_write.js OUTDIR [SEED] [--small]
// Writes OUTDIR/<case>.arrow (stream), <case>.file.arrow (file),
// <case>.jsonl, and cases.json (each case's files and its columns whose
// floats are float32 or float16, compared at that precision). --small
// writes a few rows of each, the fuzzer's seeds (tests/fuzz/corpus/arrow).
'use strict';
const fs = require('fs');
const path = require('path');
const A = require('apache-arrow');

const out = process.argv[2];
let seed = Number(process.argv[3] || 20240611) >>> 0;
const small = process.argv.includes('--small');
const rowsOf = (n) => (small ? 3 : n);
const batchSizes = small ? [2, 0, 1] : [64, 0, 17, 100];

// mulberry32: a small seeded generator, so every run writes the same files
function random() {
    seed = (seed + 0x6d2b79f5) >>> 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const int = (lo, hi) => lo + Math.floor(random() * (hi - lo + 1));
const pick = (xs) => xs[int(0, xs.length - 1)];
const maybe = (p, f) => (random() < p ? null : f());
const listOf = (lo, hi, f) => Array.from({ length: int(lo, hi) }, f);

const WORDS = ['the', 'Normans', 'were', 'in', 'Normandy', 'café', 'naïve', 'Zürich', '東京',
    'Ελλάδα', 'русский', 'emoji 🤗', 'tab\there', 'quote"s', 'back\\slash', 'line\nbreak',
    '', 'x', 'Frédéric Chopin', 'مرحبا', 'ﬁ ligature', '1990s'];
const text = (lo, hi) => listOf(lo, hi, () => pick(WORDS)).join(' ');

// ---- schemas and rows ----

const { Field, Utf8, LargeUtf8, Bool, Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32,
    Uint64, Float16, Float32, Float64, List, FixedSizeList, Struct, Dictionary, Null } = A;
const f = (name, type, nullable = true) => new Field(name, type, nullable);
const list = (type) => new List(new Field('item', type, true));
const largeList = (type) => new A.LargeList(new Field('item', type, true));

function squad(n) {
    const fields = [f('id', new Utf8()), f('title', new Utf8()), f('context', new Utf8()),
        f('question', new Utf8()),
        f('answers', new Struct([f('text', list(new Utf8())), f('answer_start', list(new Int32()))]))];
    const rows = listOf(n, n, (_, i) => {
        const k = int(0, 3);
        return {
            id: maybe(0.05, () => 'q' + i.toString(16).padStart(24, '0')),
            title: maybe(0.1, () => text(0, 3)),
            context: text(0, 40),
            question: maybe(0.1, () => text(0, 12)),
            // a null struct, null lists, null items, empty lists
            answers: maybe(0.1, () => ({
                text: maybe(0.1, () => listOf(k, k, () => maybe(0.1, () => text(0, 4)))),
                answer_start: maybe(0.1, () => listOf(k, k, () => maybe(0.1, () => int(0, 5000)))),
            })),
        };
    });
    return { fields, rows };
}

function glue(n, pair, floatLabel) {
    const fields = pair ? [f('sentence1', new Utf8()), f('sentence2', new Utf8())]
        : [f('sentence', new Utf8())];
    fields.push(floatLabel ? f('label', new Float32()) : f('label', new Int64()), f('idx', new Int32()));
    const rows = listOf(n, n, (_, i) => {
        const row = pair ? { sentence1: text(0, 20), sentence2: maybe(0.05, () => text(0, 20)) }
            : { sentence: text(0, 25) };
        // STS-B scores: 0 to 5 (integral ones too, written 3.0 as Python does)
        row.label = floatLabel ? maybe(0.05, () => pick([int(0, 5), random() * 5, int(0, 25) / 5]))
            : maybe(0.05, () => BigInt(pick([-1, 0, 1, 2])));
        row.idx = i;
        return row;
    });
    return { fields, rows };
}

function conll(n) {
    const fields = [f('id', new Utf8()), f('tokens', list(new Utf8())),
        f('pos_tags', list(new Int64())), f('chunk_tags', list(new Int32())),
        f('ner_tags', list(new Int64()))];
    const rows = listOf(n, n, (_, i) => {
        const k = int(0, 30);
        return {
            id: String(i),
            tokens: listOf(k, k, () => pick(WORDS)),
            pos_tags: listOf(k, k, () => BigInt(int(0, 46))),
            chunk_tags: maybe(0.05, () => listOf(k, k, () => int(0, 22))),
            ner_tags: listOf(k, k, () => BigInt(int(0, 8))),
        };
    });
    return { fields, rows };
}

// Every type the reader decodes, at its edges. float16 values are exact
// halves, so that no rounding of the writer's is compared.
function types(n) {
    const dict = new Dictionary(new Utf8(), new Int16());
    const fields = [f('flag', new Bool()), f('i8', new Int8()), f('u8', new Uint8()),
        f('i16', new Int16()), f('u16', new Uint16()), f('u32', new Uint32()),
        f('i64', new Int64()), f('u64', new Uint64()), f('h', new Float16()),
        f('x', new Float64()), f('big', new LargeUtf8()), f('scores', largeList(new Float64())),
        f('triple', new FixedSizeList(3, new Field('item', new Int32(), true))),
        f('nothing', new Null()), f('flags', list(new Bool())),
        f('outer', new Struct([f('inner', new Struct([f('b', new Int32())])), f('s', new Utf8())])),
        f('category', dict)];
    const rows = listOf(n, n, () => ({
        flag: maybe(0.2, () => random() < 0.5),
        i8: maybe(0.1, () => pick([-128, 127, 0, int(-128, 127)])),
        u8: maybe(0.1, () => pick([0, 255, int(0, 255)])),
        i16: maybe(0.1, () => pick([-32768, 32767, int(-32768, 32767)])),
        u16: maybe(0.1, () => pick([0, 65535, int(0, 65535)])),
        u32: maybe(0.1, () => pick([0, 4294967295, int(0, 4294967295)])),
        // the JSON reader types integers past +-9.2e18 as floats: the
        // extremes of int64 and uint64 are checked apart (special.arrow)
        i64: maybe(0.1, () => pick([-(9n * 10n ** 18n), 9n * 10n ** 18n, BigInt(int(-1e9, 1e9)) * 1000003n])),
        u64: maybe(0.1, () => pick([0n, 9n * 10n ** 18n, BigInt(int(0, 1e9))])),
        h: maybe(0.1, () => pick([0, -0.5, 1.5, 65504, -65504, 2 ** -24, 0.099975585937500,
            int(-2048, 2048) / 16])),
        x: maybe(0.1, () => pick([0.1, -2.5e-300, 1e21, 123456789.125, 5e-324, 3.0, -0,
            random() * 1e6, 1 / 3])),
        big: maybe(0.1, () => text(0, 10)),
        scores: maybe(0.1, () => listOf(0, 4, () => maybe(0.2, () => random()))),
        triple: maybe(0.1, () => [int(-5, 5), maybe(0.2, () => int(0, 9)), int(100, 200)]),
        nothing: null,
        flags: maybe(0.1, () => listOf(0, 5, () => maybe(0.1, () => random() < 0.5))),
        outer: maybe(0.2, () => ({
            inner: maybe(0.2, () => ({ b: maybe(0.2, () => int(-1000, 1000)) })),
            s: maybe(0.2, () => text(0, 3)),
        })),
        category: maybe(0.1, () => pick(['positive', 'negative', 'neutral', 'ünïcode'])),
    }));
    return { fields, rows, narrow: { h: 'float16' } };
}

// ---- writing ----

const isFloat = (type) => A.DataType.isFloat(type);

// A value as Python's json.dumps writes it (a float keeps its point).
function jsonValue(v, type) {
    if (v === null || v === undefined) return 'null';
    if (Array.isArray(v)) {
        const item = type.children ? type.children[0].type : type.valueType;
        return '[' + v.map((x) => jsonValue(x, item)).join(', ') + ']';
    }
    if (typeof v === 'bigint') return v.toString();
    if (typeof v === 'number' && isFloat(type) && Number.isInteger(v) && Math.abs(v) < 1e16)
        return (v < 0 || Object.is(v, -0) ? '-' : '') + Math.abs(v).toFixed(1);
    return JSON.stringify(v);
}

// A row's keys flattened as Dataset.flatten() names them: "answers.text".
function flatten(fields, row, prefix, into) {
    for (const field of fields) {
        const v = row === null ? null : row[field.name];
        const type = A.DataType.isDictionary(field.type) ? field.type.dictionary : field.type;
        if (A.DataType.isStruct(type)) flatten(type.children, v, prefix + field.name + '.', into);
        else into.push(JSON.stringify(prefix + field.name) + ': ' + jsonValue(v, type));
    }
    return into;
}

// Rows into record batches of `sizes` rows each (an empty batch included).
function table(fields, rows, sizes) {
    const schema = new A.Schema(fields);
    const batches = [];
    for (let at = 0, k = 0; at < rows.length || k === 0; k++) {
        const size = sizes[k % sizes.length];
        const chunk = rows.slice(at, at + size);
        at += size;
        const vector = A.vectorFromArray(chunk, new Struct(fields));
        for (const data of vector.data) batches.push(new A.RecordBatch(schema, data));
    }
    return new A.Table(schema, batches);
}

// tables: the table each format writes ({stream: t, file: t}).
function write(name, tables, options, cases, narrow) {
    const files = {};
    for (const [format, t] of Object.entries(tables)) {
        const Writer = format === 'file' ? A.RecordBatchFileWriter : A.RecordBatchStreamWriter;
        const file = name + (format === 'file' ? '.file.arrow' : '.arrow');
        const writer = new Writer(options);
        fs.writeFileSync(path.join(out, file), writer.writeAll(t).toUint8Array(true));
        files[format] = file;
    }
    cases.push({ name, files, jsonl: name + '.jsonl', narrow: narrow || {} });
}

// An installed package's version (their exports hide package.json).
function version(name) {
    for (let dir = path.dirname(require.resolve(name)); dir !== path.dirname(dir); dir = path.dirname(dir)) {
        const file = path.join(dir, 'package.json');
        if (fs.existsSync(file) && JSON.parse(fs.readFileSync(file, 'utf8')).name === name)
            return JSON.parse(fs.readFileSync(file, 'utf8')).version;
    }
    return null;
}

async function main() {
    fs.mkdirSync(out, { recursive: true });
    const cases = [];
    const sets = {
        squad: squad(rowsOf(230)),
        glue_pair: glue(rowsOf(180), true, false),
        glue_single: glue(rowsOf(150), false, false),
        stsb: { ...glue(rowsOf(120), true, true), narrow: { label: 'float32' } },
        conll: conll(rowsOf(200)),
        types: types(rowsOf(160)),
    };
    for (const [name, set] of Object.entries(sets)) {
        const lines = set.rows.map((row) => '{' + flatten(set.fields, row, '', []).join(', ') + '}');
        fs.writeFileSync(path.join(out, name + '.jsonl'), lines.join('\n') + '\n');
        // A file holds one dictionary per column for all its batches (no
        // replacements): batches built apart each have their own.
        const stream = table(set.fields, set.rows, batchSizes);
        const file = name === 'types' ? table(set.fields, set.rows, [set.rows.length]) : stream;
        write(name, { stream, file }, {}, cases, set.narrow);
    }
    // Arrow < 0.15's framing: no continuation word before each length.
    const legacy = sets.glue_pair;
    fs.copyFileSync(path.join(out, 'glue_pair.jsonl'), path.join(out, 'legacy.jsonl'));
    const legacyTable = table(legacy.fields, legacy.rows, [50]);
    write('legacy', { stream: legacyTable, file: legacyTable }, { writeLegacyIpcFormat: true },
        cases, {});
    // apache-arrow 21.2.0 writes each compressed buffer's compressed length
    // where the format wants its uncompressed one (its own reader ignores
    // the number; pyarrow's does not): put the right number there.
    const writer = Object.getPrototypeOf(A.RecordBatchStreamWriter.prototype);
    const compress = writer._compressBodyBuffers;
    writer._compressBodyBuffers = function (buffers) {
        const result = compress.call(this, buffers);
        buffers.forEach((raw, k) => {
            const prefix = result.buffers[2 * k];
            const view = new DataView(prefix.buffer, prefix.byteOffset, prefix.byteLength);
            if (prefix.byteLength === 8 && view.getBigInt64(0, true) !== -1n)
                view.setBigInt64(0, BigInt(raw.byteLength), true);
        });
        return result;
    };
    // A ZSTD-compressed body (the datasets library never writes one; users may).
    let zstd = null;
    try {
        zstd = require('@bokuweb/zstd-wasm');
        await zstd.init();
    } catch (e) {
        zstd = null;
    }
    if (zstd) {
        A.compressionRegistry.set(A.CompressionType.ZSTD, {
            encode: (data) => zstd.compress(data, 3),
            decode: (data) => zstd.decompress(data),
        });
        const set = sets.conll;
        fs.copyFileSync(path.join(out, 'conll.jsonl'), path.join(out, 'zstd.jsonl'));
        const t = table(set.fields, set.rows, [80]);
        write('zstd', { stream: t, file: t }, { compressionType: A.CompressionType.ZSTD }, cases, {});
    }
    // What the reader must refuse, and what its message must name.
    const refusals = [];
    const refuse = (column, type, values, options, expect) => {
        const file = 'refuse_' + column + '.arrow';
        const t = table([f(column, type)], values.map((v) => ({ [column]: v })), [values.length]);
        const w = new A.RecordBatchStreamWriter(options || {});
        fs.writeFileSync(path.join(out, file), w.writeAll(t).toUint8Array(true));
        refusals.push({ file, what: 'a column of type ' + type, expect: expect || ["column '" + column + "'"] });
    };
    refuse('blob', new A.Binary(), [new Uint8Array([0, 255]), null]);
    refuse('matrix', list(list(new Int32())), [[[1], [2, 3]], []]);
    refuse('when', new A.TimestampMillisecond(), [0, 86400000]);
    refuse('price', new A.Decimal(2, 10, 128), [null]);
    // LZ4_FRAME, refused by name: an "encoder" whose frame is only a header
    // (the reader refuses the codec before it would decompress anything).
    A.compressionRegistry.set(A.CompressionType.LZ4_FRAME, {
        encode: () => new Uint8Array([0x04, 0x22, 0x4d, 0x18, 0x40, 0x40, 0xc0, 0, 0, 0, 0]),
    });
    refuse('lz4', new Utf8(), [text(20, 30), text(20, 30)],
        { compressionType: A.CompressionType.LZ4_FRAME }, ['record batch 0', 'LZ4_FRAME']);
    refusals[refusals.length - 1].what = 'a body compressed with LZ4_FRAME';
    const special = table([f('d', new Float64()), f('s', new Float32()), f('i64', new Int64()),
        f('u64', new Uint64())], [NaN, Infinity, -Infinity, -0].map((v, i) => ({
        d: v, s: v, i64: [-(2n ** 63n), 2n ** 63n - 1n, 0n, -1n][i],
        u64: [2n ** 64n - 1n, 2n ** 63n, 2n ** 63n - 1n, 0n][i] })), [4]);
    fs.writeFileSync(path.join(out, 'special.arrow'), A.tableToIPC(special, 'stream'));
    fs.writeFileSync(path.join(out, 'cases.json'), JSON.stringify({
        arrow: version('apache-arrow'),
        zstd: zstd ? version('@bokuweb/zstd-wasm') : null,
        cases,
        refusals,
        special: 'special.arrow',
    }, null, 1));
}

main().catch((e) => {
    console.error(e && e.stack ? e.stack : e);
    process.exit(1);
});
