#!/bin/sh
# The container image's install steps without a Docker daemon: the script
# deploy/Dockerfile runs (deploy/install.sh), run here with the image's
# PREFIX into a staging folder (DESTDIR; this build's objects), then what
# the image's environment gives a user: the tools, and the Python package
# from PREFIX/python loading PREFIX/lib's library (found relative to the
# package: no CPUTRAIN_LIBRARY), one training step, run_qa --version. The
# Dockerfile must run that script with that PREFIX and name that folder in
# PYTHONPATH. One ok/FAIL line per check.
# usage: B=build PYTHON=/usr/bin/python3 sh tests/deploy/run.sh (from the top)
set -u
: "${B:=build}" "${PYTHON:=/usr/bin/python3}"
prefix=/opt/cputrain
work=$(mktemp -d "${TMPDIR:-/tmp}/cputrain-image.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "image: ok: $1"; }
bad() { failed=$((failed + 1)); echo "image: FAILED: $1"; [ -z "${2:-}" ] || sed 's/^/  | /' "$2"; }

grep -q "^RUN sh deploy/install.sh $prefix " deploy/Dockerfile &&
    grep -q "^ENV PYTHONPATH=$prefix/python$" deploy/Dockerfile &&
    ok "the Dockerfile runs deploy/install.sh $prefix and sets PYTHONPATH=$prefix/python" ||
    bad "deploy/Dockerfile no longer runs deploy/install.sh $prefix or sets PYTHONPATH"

if DESTDIR="$work/root" PYTHON="$PYTHON" sh deploy/install.sh "$prefix" "$B" > "$work/log" 2>&1; then
    ok "deploy/install.sh $prefix into a staging folder"
else
    bad "deploy/install.sh" "$work/log"
    echo "image: $passed passed, $failed failed"
    exit 1
fi
root=$work/root$prefix
for f in bin/cputrain-qa bin/cputrain-run lib/libcputrain.so.0 python/cputrain/__init__.py \
    python/cputrain/_installed.py; do
    [ -e "$root/$f" ] || bad "$prefix/$f is not installed"
done
"$root/bin/cputrain-qa" --version > "$work/log" 2>&1 && ok "$prefix/bin/cputrain-qa --version" ||
    bad "cputrain-qa --version" "$work/log"

cd "$work"
if env -u CPUTRAIN_LIBRARY PYTHONPATH="$root/python" "$PYTHON" -c '
import os, sys, cputrain
want = os.path.realpath(sys.argv[1] + "/lib")
assert os.path.realpath(cputrain.library_path).startswith(want), cputrain.library_path
model = cputrain.Model.create("bert-test", task="question-answering", seed=1)
assert model.forward_backward([[2] + [7] * 15] * 2, start_positions=[3, 4],
                              end_positions=[5, 6]) > 0
' "$root" > "$work/log" 2>&1; then
    ok "import cputrain from $prefix/python loads $prefix/lib's library; a training step"
else
    bad "the Python package of the image" "$work/log"
fi
if env -u CPUTRAIN_LIBRARY PYTHONPATH="$root/python" "$PYTHON" -m cputrain.run_qa --version \
    > "$work/log" 2>&1; then
    ok "python3 -m cputrain.run_qa --version ($(cat "$work/log"))"
else
    bad "run_qa --version" "$work/log"
fi
echo "image: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
