// Writes the Hub's Parquet form of a SQuAD split with DuckDB (npm
// @duckdb/node-api), an independent writer: JSON lines of datasets' flat
// records in, a .parquet with answers as struct<text: varchar[],
// answer_start: int[]> out, as the Hub's rajpurkar/squad files hold it.
// usage: node to_parquet.js IN.jsonl OUT.parquet CODEC   (NODE_PATH finds DuckDB)
'use strict';
const { DuckDBInstance } = require('@duckdb/node-api');

async function main() {
    const [input, output, codec] = process.argv.slice(2);
    const db = await DuckDBInstance.create(':memory:');
    const con = await db.connect();
    const quote = (s) => "'" + s.replace(/'/g, "''") + "'";
    await con.run(`COPY (SELECT * FROM read_json(${quote(input)}, format = 'newline_delimited',
        columns = {id: 'VARCHAR', title: 'VARCHAR', context: 'VARCHAR', question: 'VARCHAR',
                   answers: 'STRUCT(text VARCHAR[], answer_start INTEGER[])'}))
        TO ${quote(output)} (FORMAT PARQUET, COMPRESSION ${codec})`);
}
main().catch((e) => { console.error(e); process.exit(1); });
