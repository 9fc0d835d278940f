// Writes the Hub's Parquet form of a dataset split with DuckDB (npm
// @duckdb/node-api), an independent writer: JSON lines of datasets' flat
// records in, a .parquet out. COLUMNS is DuckDB's read_json column spec;
// the default is SQuAD's, answers as struct<text: varchar[], answer_start:
// int[]> as the Hub's rajpurkar/squad files hold it.
// usage: node to_parquet.js IN.jsonl OUT.parquet CODEC [COLUMNS]  (NODE_PATH finds DuckDB)
'use strict';
const { DuckDBInstance } = require('@duckdb/node-api');

const SQUAD = "{id: 'VARCHAR', title: 'VARCHAR', context: 'VARCHAR', question: 'VARCHAR', " +
    "answers: 'STRUCT(text VARCHAR[], answer_start INTEGER[])'}";

async function main() {
    const [input, output, codec, columns] = process.argv.slice(2);
    const db = await DuckDBInstance.create(':memory:');
    const con = await db.connect();
    const quote = (s) => "'" + s.replace(/'/g, "''") + "'";
    await con.run(`COPY (SELECT * FROM read_json(${quote(input)}, format = 'newline_delimited',
        columns = ${columns || SQUAD})) TO ${quote(output)} (FORMAT PARQUET, COMPRESSION ${codec})`);
}
main().catch((e) => { console.error(e); process.exit(1); });
