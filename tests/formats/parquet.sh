#!/bin/sh
# ct_table_load on Parquet against independent writers: DuckDB (npm
# @duckdb/node-api) and arrow-rs (npm parquet-wasm, fed by apache-arrow),
# installed into $B/parquet-writer/npm when missing (the npm registry is the
# only network this needs), write SQuAD-, GLUE- and CoNLL-shaped random rows
# to .parquet (uncompressed, snappy, zstd; several row groups; pages v1 and
# v2, dictionary and plain) and the script writes the same rows as JSON
# lines; each pair must read to the same table, and damaged or unsupported
# files must be refused naming the file. One ok/FAIL line per check; exit 1
# on any failure, 77 when node or npm is missing.
#
# usage: B=build PYTHON=/usr/bin/python3 sh tests/formats/parquet.sh   (from the top)
set -u
: "${B:=build}" "${PYTHON:=/usr/bin/python3}"

here=$(dirname "$0")
npm_dir="$B/parquet-writer/npm"
modules="$npm_dir/node_modules"
work="$B/parquet-test"
lib="$B/lib/libcputrain.so.0"

for tool in node npm; do
    if ! command -v "$tool" > /dev/null 2>&1; then
        echo "parquet: SKIPPED: $tool not found (scripts/install-deps.sh installs nodejs and npm)"
        exit 77
    fi
done
if [ ! -e "$lib" ]; then
    echo "parquet: $lib missing; run make B=$B first"
    exit 1
fi

# Pinned: the writers must not move under the test.
if [ ! -d "$modules/@duckdb/node-api" ] || [ ! -d "$modules/parquet-wasm" ] ||
    [ ! -d "$modules/apache-arrow" ]; then
    echo "parquet: installing @duckdb/node-api, parquet-wasm and apache-arrow into $npm_dir"
    npm install --prefix "$npm_dir" --no-audit --no-fund --no-save --loglevel=error \
        @duckdb/node-api@1.5.6-r.1 parquet-wasm@0.8.0 apache-arrow@21.2.0 || exit 1
fi

rm -rf "$work"
NODE_PATH="$(cd "$modules" && pwd)" node "$here/parquet_write.js" "$work" || exit 1
PYTHONPATH=bindings/python CPUTRAIN_LIBRARY="$lib" "$PYTHON" "$here/parquet_compare.py" "$work"
