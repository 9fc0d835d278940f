#!/bin/sh
# Runs every test group of `make check` in turn, shows each one's output, and
# ends with one summary line counting the groups that passed and failed.
# Expects B (build dir), VERSION, CC, CXX, PYTHON and MAKE from the Makefile.
set -u
: "${B:=build}" "${PYTHON:=/usr/bin/python3}" "${MAKE:=make}"

passed=0
failed=0
failed_names=""

run() {
    name=$1
    shift
    echo "==== $name"
    if "$@"; then
        passed=$((passed + 1))
        echo "==== $name: ok"
    else
        failed=$((failed + 1))
        failed_names="$failed_names [$name]"
        echo "==== $name: FAILED"
    fi
}

lib="$B/lib/libcputrain.so.$VERSION"

# A locale with a decimal comma, built into the build folder, so the JSON
# and argument tests can prove that number text ignores LC_NUMERIC.
mkdir -p "$B/locale"
locpath=
if localedef -i de_DE -f UTF-8 "$B/locale/de_DE.UTF-8" >/dev/null 2>&1 ||
    [ -d "$B/locale/de_DE.UTF-8" ]; then
    locpath=$PWD/$B/locale
fi

run "C unit suites (Check)" env ${locpath:+LOCPATH="$locpath"} "$B/tests/check_all"
run "C unit suites under AddressSanitizer and UBSan" env ${locpath:+LOCPATH="$locpath"} \
    "$MAKE" --no-print-directory -s check-asan B="$B"
run "public headers as C99 and C++" sh tests/test_headers.sh
run "exported symbols = header = map" "$PYTHON" tests/abi_symbols.py "$lib" include/cputrain libcputrain.map
run "ABI against baseline" "$MAKE" --no-print-directory -s abi-check B="$B"
run "C++ wrapper" "$B/tests/test_wrapper"
run "Python bindings" env PYTHONPATH=bindings/python CPUTRAIN_LIBRARY="$lib" \
    "$PYTHON" -m unittest discover -s tests/python -t tests/python
run "tokenizer against Hugging Face tokenizers (npm)" env B="$B" CC="$CC" PYTHON="$PYTHON" \
    sh tests/tokenizer/run.sh
run "demo learns: cputrain-qa on the generated SQuAD set, EM >= 60" \
    env B="$B" PYTHON="$PYTHON" sh tests/demo/run.sh
run "cputrain-qa command line (run_qa.py arguments, dataset folder, train, eval, v2)" \
    env B="$B" PYTHON="$PYTHON" sh tests/qa_cli/run.sh
run "install + pkg-config, shared and static" sh tests/pkgconfig/run.sh

[ -z "$failed_names" ] || echo "failed groups:$failed_names"
echo "check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
