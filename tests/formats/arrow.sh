#!/bin/sh
# The Arrow IPC reader against an independent writer: Apache Arrow's
# JavaScript implementation (npm apache-arrow, and @bokuweb/zstd-wasm for
# a ZSTD-compressed body) writes SQuAD-, GLUE-, STS-B- and CoNLL-shaped
# tables and one of every decoded type as IPC streams (as the datasets
# cache holds them) and IPC files, with the same rows as JSON lines; then
# arrow_compare.py loads each pair through the Python bindings and wants
# the same table, and refusals of broken and unsupported files. Installs
# the npm packages into $B/arrow-writer/npm when missing (the npm
# registry is the only network this needs). One "ok" or "FAIL" line per
# check; exit status 1 on any failure, 77 when node or npm is missing.
#
# usage: B=build PYTHON=/usr/bin/python3 sh tests/formats/arrow.sh   (from the tree's top)
set -u
: "${B:=build}" "${PYTHON:=python3}"

here=$(dirname "$0")
npm_dir="$B/arrow-writer/npm"
modules="$npm_dir/node_modules"
out="$B/arrow-test"
lib="$B/lib/libcputrain.so.0"
[ -e "$lib" ] || lib=$(find "$B/lib" -name 'libcputrain.so.*.*.*' 2>/dev/null | head -n 1)

for tool in node npm; do
    if ! command -v "$tool" > /dev/null 2>&1; then
        echo "arrow: SKIPPED: $tool not found (scripts/install-deps.sh installs nodejs and npm)"
        exit 77
    fi
done
if [ ! -e "$lib" ]; then
    echo "arrow: no $B/lib/libcputrain.so.*; run make B=$B first"
    exit 1
fi

# Pinned versions: the reference must not move under the test.
if [ ! -d "$modules/apache-arrow" ] || [ ! -d "$modules/@bokuweb/zstd-wasm" ]; then
    echo "arrow: installing apache-arrow and @bokuweb/zstd-wasm into $npm_dir"
    mkdir -p "$npm_dir" || exit 1
    npm install --prefix "$npm_dir" --no-audit --no-fund --no-save --loglevel=error \
        apache-arrow@21.2.0 @bokuweb/zstd-wasm@0.0.27 || exit 1
fi

rm -rf "$out"
NODE_PATH="$(cd "$modules" && pwd)" node "$here/arrow_write.js" "$out" || {
    echo "FAIL arrow: the writer (apache-arrow) failed"
    exit 1
}
PYTHONPATH=bindings/python CPUTRAIN_LIBRARY="$lib" "$PYTHON" "$here/arrow_compare.py" "$out"
