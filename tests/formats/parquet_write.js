// The independent writers of tests/formats/parquet.sh: random rows in the
// shapes of the Hub's SQuAD, GLUE and CoNLL-2003 files (plus one of the
// other scalar types), written to .parquet by DuckDB (npm @duckdb/node-api:
// three compressions, several row groups, one page per chunk) and by
// arrow-rs, the Rust sibling of pyarrow's writer (npm parquet-wasm, from an
// apache-arrow table: many small pages per chunk, DATA_PAGE and
// DATA_PAGE_V2, dictionary and plain), and by this script itself to the
// JSON lines file `datasets` would give for the same rows (struct columns
// flattened, "answers.text", as Dataset.flatten() names them). Then files
// the reader must refuse. A manifest.json tells parquet_compare.py what to
// load.
//
// usage: node parquet_write.js OUT_DIR      (NODE_PATH finds the npm packages)
//        node parquet_write.js --corpus DIR (the fuzzer's seeds: a few small files)
'use strict';
const fs = require('fs');
const path = require('path');
const { DuckDBInstance } = require('@duckdb/node-api');
const arrow = require('apache-arrow');
const parquetWasm = require('parquet-wasm');

const corpus = process.argv[2] === '--corpus';
const out = process.argv[corpus ? 3 : 2];
const ROWS = 4500;
const ROW_GROUP_SIZE = 2048; // DuckDB cuts row groups at multiples of 2048 rows: 3 of them
const CODECS = ['uncompressed', 'snappy', 'zstd'];

// mulberry32: the same rows on every run
let seed = 20240607;
function random() {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const int = (n) => Math.floor(random() * n);
const chance = (p) => random() < p;
const pick = (a) => a[int(a.length)];

const WORDS = ['the', 'of', 'Normans', 'Normandy', 'France', 'in', 'was', 'naïve', 'café',
    'Zürich', '東京', '日本語', 'Ελληνικά', 'русский', 'العربية', 'हिन्दी', 'Beyoncé',
    'São Paulo', '🙂', 'ﬁ', 'e\u0301', "it's", '"quoted"', 'back\\slash', 'tab\there',
    'new\nline', '1,234', '3.5', 'null', 'true', '[x]', '{y}'];
function sentence(min, max) {
    const n = min + int(max - min + 1);
    const words = [];
    for (let i = 0; i < n; i++)
        words.push(pick(WORDS));
    return words.join(' ');
}
const maybe = (p, f) => (chance(p) ? null : f());

// Each schema: its DuckDB columns (name, SQL type, kind) and a row maker.
// Kinds say how a value is written as SQL and as JSON.
const TITLES = Array.from({ length: 30 }, (_, i) => `Title ${i} ${pick(WORDS)}`);
const CONTEXTS = Array.from({ length: 200 }, () => sentence(20, 60));
const SCHEMAS = {
    squad: {
        columns: [['id', 'VARCHAR', 'str'], ['title', 'VARCHAR', 'str'],
            ['context', 'VARCHAR', 'str'], ['question', 'VARCHAR', 'str'],
            ['answers', 'STRUCT(text VARCHAR[], answer_start INTEGER[])', 'struct',
                [['text', 'VARCHAR[]', 'strs'], ['answer_start', 'INTEGER[]', 'ints']]]],
        row(i) {
            const context = pick(CONTEXTS), chars = Array.from(context); // code points, as Python's
            const k = chance(0.3) ? 0 : 1 + int(3); // SQuAD v2: unanswerable
            const answers = { text: [], answer_start: [] };
            for (let j = 0; j < k; j++) {
                const start = int(chars.length);
                answers.text.push(chance(0.02) ? null : chars.slice(start, start + 1 + int(20)).join(''));
                answers.answer_start.push(start);
            }
            if (chance(0.02))
                answers.text = null;
            return { id: i.toString(16).padStart(24, '5'), title: maybe(0.01, () => pick(TITLES)),
                context, question: sentence(0, 15) + '?', answers: chance(0.02) ? null : answers };
        },
    },
    glue_mrpc: {
        columns: [['sentence1', 'VARCHAR', 'str'], ['sentence2', 'VARCHAR', 'str'],
            ['label', 'BIGINT', 'int'], ['idx', 'INTEGER', 'int']],
        row: (i) => ({ sentence1: sentence(0, 30), sentence2: maybe(0.01, () => sentence(0, 30)),
            label: chance(0.02) ? -1 : int(2), idx: i }),
    },
    glue_sst2: {
        columns: [['sentence', 'VARCHAR', 'str'], ['label', 'BIGINT', 'int'],
            ['idx', 'INTEGER', 'int']],
        row: (i) => ({ sentence: sentence(0, 25), label: maybe(0.01, () => int(2)), idx: i }),
    },
    glue_stsb: { // datasets' stsb label is float32
        columns: [['sentence1', 'VARCHAR', 'str'], ['sentence2', 'VARCHAR', 'str'],
            ['label', 'FLOAT', 'float'], ['idx', 'INTEGER', 'int']],
        row: (i) => ({ sentence1: sentence(1, 20), sentence2: sentence(1, 20),
            label: int(5001) / 1000, idx: i }),
    },
    conll2003: {
        columns: [['id', 'VARCHAR', 'str'], ['tokens', 'VARCHAR[]', 'strs'],
            ['pos_tags', 'BIGINT[]', 'ints'], ['chunk_tags', 'BIGINT[]', 'ints'],
            ['ner_tags', 'BIGINT[]', 'ints']],
        row(i) {
            const n = chance(0.03) ? 0 : 1 + int(30);
            const tags = (k, p) => Array.from({ length: n }, () => (chance(p) ? int(k) : 0));
            const row = { id: String(i), tokens: Array.from({ length: n }, () => pick(WORDS)),
                pos_tags: tags(47, 0.9), chunk_tags: tags(23, 0.7), ner_tags: tags(9, 0.2) };
            if (chance(0.02))
                row.tokens = null;
            return row;
        },
    },
    scalars: { // the other scalar types a datasets file may hold
        columns: [['flag', 'BOOLEAN', 'bool'], ['score', 'DOUBLE', 'float'],
            ['f32', 'FLOAT', 'float'], ['tiny', 'TINYINT', 'int'], ['small', 'SMALLINT', 'int'],
            ['u8', 'UTINYINT', 'int'], ['u32', 'UINTEGER', 'int'], ['u64', 'UBIGINT', 'int'],
            ['i64', 'BIGINT', 'int'], ['flags', 'BOOLEAN[]', 'bools'],
            ['scores', 'DOUBLE[]', 'floats']],
        row() {
            const special = [0.1, 1e-300, 5e-324, 1.7976931348623157e308, -2.5, 1e21, 123456789.125];
            return {
                flag: maybe(0.05, () => chance(0.5)),
                score: maybe(0.05, () => (chance(0.2) ? pick(special) : (random() - 0.5) * 10 ** int(12))),
                f32: maybe(0.05, () => (int(200001) - 100000) / 100),
                tiny: int(256) - 128,
                small: int(65536) - 32768,
                u8: int(256),
                u32: int(4294967296),
                // past int64: FLOAT, as the JSON reader types such a literal
                u64: chance(0.05) ? pick([18446744073709551615n, 10000000000000000000n])
                    : BigInt(int(2 ** 52)),
                // within +-9.2e18, where the JSON reader keeps integers INT
                i64: chance(0.05) ? pick([-9200000000000000000n, 9199999999999999999n])
                    : BigInt(int(2 ** 52)) - 2n ** 51n,
                flags: maybe(0.05, () => Array.from({ length: int(5) }, () => maybe(0.1, () => chance(0.5)))),
                scores: Array.from({ length: int(4) }, () => random() * 100),
            };
        },
    },
};

// ---- values as SQL literals and as JSON ----
const sqlString = (s) => "'" + s.replace(/'/g, "''") + "'";
function sqlValue(kind, v, type) {
    if (v === null)
        return 'NULL';
    switch (kind) {
    case 'str': return sqlString(v);
    case 'int': return `CAST('${v}' AS ${type})`;
    case 'float': return `CAST('${v}' AS ${type})`;
    case 'bool': return v ? 'true' : 'false';
    case 'strs': case 'ints': case 'floats': case 'bools': {
        const item = { strs: 'str', ints: 'int', floats: 'float', bools: 'bool' }[kind];
        const itemType = type.slice(0, -2);
        return `CAST([${v.map((x) => sqlValue(item, x, itemType)).join(', ')}] AS ${type})`;
    }
    }
    throw new Error('kind ' + kind);
}
// Floats as Python's json.dumps writes them: an integral one keeps ".0".
function jsonValue(kind, v) {
    if (v === null)
        return 'null';
    if (kind === 'float')
        return Number.isInteger(v) && Math.abs(v) < 1e16 ? v.toFixed(1) : String(v);
    if (kind === 'int')
        return String(v);
    if (kind.endsWith('s'))
        return '[' + v.map((x) => jsonValue(kind.slice(0, -1), x)).join(', ') + ']';
    return JSON.stringify(v);
}

function rowSql(schema, row) {
    return '(' + schema.columns.map(([name, type, kind, fields]) => {
        if (kind !== 'struct')
            return sqlValue(kind, row[name], type);
        if (row[name] === null)
            return 'NULL';
        return '{' + fields.map(([f, ftype, fkind]) =>
            `'${f}': ${sqlValue(fkind, row[name][f], ftype)}`).join(', ') + '}';
    }).join(', ') + ')';
}

function rowJson(schema, row) {
    const parts = [];
    for (const [name, , kind, fields] of schema.columns) {
        if (kind !== 'struct') {
            parts.push(JSON.stringify(name) + ': ' + jsonValue(kind, row[name]));
            continue;
        }
        for (const [f, , fkind] of fields) // flattened, null children of a null struct
            parts.push(JSON.stringify(name + '.' + f) + ': ' +
                       jsonValue(fkind, row[name] === null ? null : row[name][f]));
    }
    return '{' + parts.join(', ') + '}';
}

async function createTable(con, table, schema, rows) {
    const cols = schema.columns.map(([n, t]) => `"${n}" ${t}`).join(', ');
    await con.run(`CREATE TABLE "${table}" (_n INTEGER, ${cols})`);
    for (let i = 0; i < rows.length; i += 250) {
        const values = rows.slice(i, i + 250).map((r, j) => `(${i + j}, ` + rowSql(schema, r).slice(1));
        await con.run(`INSERT INTO "${table}" VALUES ${values.join(', ')}`);
    }
}

async function copyTo(con, table, schema, file, codec) {
    const select = schema.columns.map(([n]) => `"${n}"`).join(', ');
    await con.run(`COPY (SELECT ${select} FROM "${table}" ORDER BY _n) TO '${file}' ` +
                  `(FORMAT PARQUET, COMPRESSION '${codec}', ROW_GROUP_SIZE ${ROW_GROUP_SIZE})`);
}

async function writeSchema(con, name, schema, manifest) {
    const rows = Array.from({ length: ROWS }, (_, i) => schema.row(i));
    await createTable(con, name, schema, rows);
    fs.writeFileSync(path.join(out, name + '.jsonl'),
                     rows.map((r) => rowJson(schema, r)).join('\n') + '\n');
    for (const codec of CODECS) {
        const file = `${name}.${codec}.parquet`;
        await copyTo(con, name, schema, path.join(out, file), codec);
        const groups = await con.runAndReadAll(
            `SELECT count(DISTINCT row_group_id) FROM parquet_metadata('${path.join(out, file)}')`);
        manifest.pairs.push({ parquet: file, jsonl: name + '.jsonl', writer: 'DuckDB',
                              row_groups: Number(groups.getRows()[0][0]) });
    }
    writeArrow(name, schema, rows, manifest);
}

// The fuzzer's seeds (tests/fuzz/corpus/parquet): a few rows of each shape,
// files of a few KB, in each codec, from each writer (arrow-rs's with
// pages of a few rows).
async function writeCorpus(con) {
    const seeds = [['squad', 'snappy', 6], ['conll2003', 'zstd', 8], ['scalars', 'uncompressed', 8],
        ['glue_stsb', 'zstd', 6], ['glue_mrpc', 'uncompressed', 6]];
    for (const [name, codec, n] of seeds) {
        const schema = SCHEMAS[name];
        const rows = Array.from({ length: n }, (_, i) => schema.row(i));
        await createTable(con, name, schema, rows);
        await copyTo(con, name, schema, path.join(out, `${name}.${codec}.parquet`), codec);
    }
    for (const [name, variant, n] of [['squad', 'arrow_v2', 4], ['conll2003', 'arrow_v1', 6],
        ['scalars', 'arrow_v2_plain', 6]]) {
        const rows = Array.from({ length: n }, (_, i) => SCHEMAS[name].row(i));
        fs.writeFileSync(path.join(out, `${name}.${variant}.parquet`),
                         arrowParquet(SCHEMAS[name], rows, ARROW_VARIANTS[variant], 64, 2));
    }
    console.log(`parquet writer: seeds in ${out}`);
}

// ---- the same rows through arrow-rs ----
const ARROW_TYPES = {
    VARCHAR: () => new arrow.Utf8(), BOOLEAN: () => new arrow.Bool(),
    TINYINT: () => new arrow.Int8(), SMALLINT: () => new arrow.Int16(),
    INTEGER: () => new arrow.Int32(), BIGINT: () => new arrow.Int64(),
    UTINYINT: () => new arrow.Uint8(), UINTEGER: () => new arrow.Uint32(),
    UBIGINT: () => new arrow.Uint64(), FLOAT: () => new arrow.Float32(),
    DOUBLE: () => new arrow.Float64(),
};
// pyarrow's names: a list's items are "element"
function arrowType(type, fields) {
    if (fields)
        return new arrow.Struct(fields.map(([f, t]) => new arrow.Field(f, arrowType(t), true)));
    if (type.endsWith('[]'))
        return new arrow.List(new arrow.Field('element', arrowType(type.slice(0, -2)), true));
    return ARROW_TYPES[type]();
}
function arrowValue(type, v, fields) {
    if (v === null)
        return null;
    if (fields)
        return Object.fromEntries(fields.map(([f, t]) => [f, arrowValue(t, v[f])]));
    if (type.endsWith('[]'))
        return v.map((x) => arrowValue(type.slice(0, -2), x));
    return type === 'BIGINT' || type === 'UBIGINT' ? BigInt(v) : v;
}

// arrow-rs's bytes for rows: pages cut at pageBytes (checked every `batch`
// rows), row groups of 2000 rows.
function arrowParquet(schema, rows, [codec, version, dictionary], pageBytes, batch) {
    const columns = {};
    for (const [col, type, , fields] of schema.columns)
        columns[col] = arrow.vectorFromArray(rows.map((r) => arrowValue(type, r[col], fields)),
                                             arrowType(type, fields));
    const ipc = arrow.tableToIPC(new arrow.Table(columns), 'stream');
    let props = new parquetWasm.WriterPropertiesBuilder()
        .setCompression(parquetWasm.Compression[codec])
        .setWriterVersion(parquetWasm.WriterVersion[version])
        .setDictionaryEnabled(dictionary)
        .setDataPageSizeLimit(pageBytes).setWriteBatchSize(batch).setMaxRowGroupSize(2000);
    if (!dictionary)
        props = props.setEncoding(parquetWasm.Encoding.PLAIN);
    return parquetWasm.writeParquet(parquetWasm.Table.fromIPCStream(ipc), props.build());
}

const ARROW_VARIANTS = {
    arrow_v1: ['SNAPPY', 'V1', true],
    arrow_v2: ['ZSTD', 'V2', true],
    arrow_v2_plain: ['UNCOMPRESSED', 'V2', false],
};
function writeArrow(name, schema, rows, manifest) {
    for (const [variant, options] of Object.entries(ARROW_VARIANTS)) {
        const file = `${name}.${variant}.parquet`;
        fs.writeFileSync(path.join(out, file), arrowParquet(schema, rows, options, 1024, 128));
        manifest.pairs.push({ parquet: file, jsonl: name + '.jsonl', writer: 'arrow-rs',
                              row_groups: Math.ceil(rows.length / 2000) });
    }
}

// Files the reader refuses, each with the words its message must hold.
const REFUSALS = [
    ['gzip', `SELECT * FROM glue_sst2`, "COMPRESSION 'gzip'", 'GZIP'],
    ['lz4', `SELECT * FROM glue_sst2`, "COMPRESSION 'lz4'", 'LZ4'],
    ['delta', `SELECT idx FROM glue_sst2`, 'PARQUET_VERSION V2', 'DELTA_BINARY_PACKED'],
    ['timestamp', `SELECT TIMESTAMP '2024-01-02 03:04:05' + INTERVAL (i) SECOND AS t FROM range(5) t(i)`, '', 'TIMESTAMP'],
    ['date', `SELECT DATE '2024-01-02' AS d`, '', 'DATE'],
    ['decimal', `SELECT 1.25::DECIMAL(10, 2) AS price`, '', 'DECIMAL'],
    ['blob', `SELECT 'ab'::BLOB AS raw`, '', 'binary'],
    ['map', `SELECT MAP {'a': 1} AS m`, '', 'is a map'],
    ['list_of_structs', `SELECT [{'a': 1}] AS l`, '', 'a list of structs'],
    ['list_of_lists', `SELECT [[1, 2], [3]] AS l`, '', 'a list of lists'],
];

async function main() {
    fs.mkdirSync(out, { recursive: true });
    const db = await DuckDBInstance.create(':memory:');
    const con = await db.connect();
    if (corpus)
        return writeCorpus(con);
    const version = (await con.runAndReadAll('SELECT version()')).getRows()[0][0];
    const manifest = { duckdb: version, pairs: [], refusals: [] };
    for (const [name, schema] of Object.entries(SCHEMAS))
        await writeSchema(con, name, schema, manifest);
    for (const [name, query, options, expect] of REFUSALS) {
        const file = `refuse_${name}.parquet`;
        await con.run(`COPY (${query}) TO '${path.join(out, file)}' (FORMAT PARQUET${options ? ', ' + options : ''})`);
        manifest.refusals.push({ file, expect });
    }
    fs.writeFileSync(path.join(out, 'manifest.json'), JSON.stringify(manifest, null, 1));
    console.log(`parquet writer: DuckDB ${version} and parquet-wasm: ${manifest.pairs.length} files ` +
                `of ${ROWS} rows and their JSON lines, ${manifest.refusals.length} files to refuse, ` +
                `in ${out}`);
}

main().catch((e) => {
    console.error('parquet writer: ' + (e.stack || e));
    process.exit(1);
});
