#!/bin/sh
# Runs the libFuzzer harnesses of tests/fuzz/ (built by `make fuzz-build`).
#   run.sh probe                  exit 0 when $FUZZ_CC can build a libFuzzer
#                                 binary with ASan and UBSan, else 77 (said so)
#   run.sh check BINDIR SECONDS   replay every corpus and regression input of
#                                 each harness, then fuzz each for SECONDS
#   run.sh fuzz BINDIR SECONDS    fuzz each harness for SECONDS
# One line per harness: executions, rate, result. New inputs go to a work
# folder in the build tree, never into the source corpus; a crash leaves
# its input beside them and names it (copy it to regressions/<harness>/
# once understood). Exit status 1 when any harness failed.
set -u
here=$(dirname "$0")
mode=${1:-}

if [ "$mode" = probe ]; then
    cc=${FUZZ_CC:-clang}
    tmp=$(mktemp -d) || exit 1
    printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
        'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
        > "$tmp/probe.c"
    if command -v "$cc" > /dev/null 2>&1 &&
        "$cc" -fsanitize=fuzzer,address,undefined -o "$tmp/probe" "$tmp/probe.c" > /dev/null 2>&1; then
        rm -rf "$tmp"
        exit 0
    fi
    rm -rf "$tmp"
    echo "fuzz: SKIPPED: clang with libFuzzer not found (scripts/install-deps.sh)"
    exit 77
fi

bindir=${2:?usage: run.sh check|fuzz BINDIR SECONDS}
seconds=${3:?usage: run.sh check|fuzz BINDIR SECONDS}
work="$bindir/work"
# Leaks and undefined behaviour are failures too.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"

# The harnesses' scratch folders, all in one that goes when this script
# does (a harness that aborts on a finding cannot clean up its own).
shm=/dev/shm
[ -w "$shm" ] || shm=${TMPDIR:-/tmp}
CT_FUZZ_TMPDIR=$(mktemp -d "$shm/cputrain-fuzz-run-XXXXXX") || exit 1
export CT_FUZZ_TMPDIR
trap 'rm -rf "$CT_FUZZ_TMPDIR"' EXIT
trap 'exit 1' INT TERM

failed=0
for bin in "$bindir"/fuzz_*; do
    [ -x "$bin" ] || continue
    h=$(basename "$bin")
    h=${h#fuzz_}
    corpus="$here/corpus/$h"
    regress="$here/regressions/$h"
    log="$work/$h.log"
    # A check starts from the tree's corpus alone, so it is the same run
    # everywhere; `make fuzz` keeps what earlier runs learnt.
    [ "$mode" = check ] && rm -rf "$work/$h"
    rm -rf "$work/$h-crash"
    mkdir -p "$work/$h" "$work/$h-crash"
    result=ok

    if [ "$mode" = check ]; then
        # Each file once, as a test: a crash, leak or failed property fails.
        files=$(find "$corpus" "$regress" -type f 2>/dev/null | sort)
        n=0
        if [ -n "$files" ]; then
            n=$(printf '%s\n' "$files" | wc -l)
            # shellcheck disable=SC2086
            "$bin" $files > "$log.replay" 2>&1 || result="FAILED (see $log.replay)"
        fi
        echo "fuzz: $h: replayed $n corpus and regression input(s): $result"
        [ "$result" = ok ] || { failed=1; grep -E -m 8 'ERROR|property failed|SUMMARY|runtime error' "$log.replay"; continue; }
    fi

    # Seeds: the corpus and the regression inputs, copied, so that what the
    # fuzzer adds stays in the build tree.
    for f in $(find "$corpus" "$regress" -type f 2>/dev/null); do
        cp "$f" "$work/$h/seed-$(basename "$(dirname "$f")")-$(basename "$f")"
    done
    dict=
    [ -f "$here/dict/$h.dict" ] && dict="-dict=$here/dict/$h.dict"
    "$bin" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 $dict \
        -artifact_prefix="$work/$h-crash/" "$work/$h" > "$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    artifact=$(ls "$work/$h-crash/"* 2>/dev/null | head -n 1)
    if [ "$rc" -ne 0 ]; then
        result="FAILED (exit $rc): $artifact (log $log)"
        failed=1
    fi
    echo "fuzz: $h: ${execs:-?} execs in ${seconds} s (${rate:-?}/s): $result"
    case $result in FAILED*) grep -E -m 8 'ERROR|property failed|SUMMARY|runtime error' "$log" ;; esac
done
exit "$failed"
