#!/bin/sh
# Runs every test group of `make check` in turn, shows each one's output, and
# ends with one summary line counting the groups that passed and failed (and
# were skipped: exit status 77, the group could not run on this machine).
# Expects B (build dir), VERSION, CC, CXX, PYTHON and MAKE from the Makefile.
set -u
: "${B:=build}" "${PYTHON:=/usr/bin/python3}" "${MAKE:=make}"

passed=0
failed=0
failed_names=""
failed_logs=""
skipped=0
skipped_names=""

# Each group's output is shown as it runs and kept in $B/test-logs, so what
# a failed one said can be shown again beside the summary: a CI log that
# keeps only its last lines still says what failed.
logs="$B/test-logs"
rm -rf "$logs"
mkdir -p "$logs"
groups=0

run() {
    name=$1
    shift
    groups=$((groups + 1))
    log="$logs/$groups.log"
    { echo "==== $name"; "$@" 2>&1; echo $? >"$log.rc"; } | tee "$log"
    rc=$(cat "$log.rc")
    if [ "$rc" -eq 0 ]; then
        passed=$((passed + 1))
        echo "==== $name: ok"
    elif [ "$rc" -eq 77 ]; then # the group could not run here (it says why)
        skipped=$((skipped + 1))
        skipped_names="$skipped_names [$name]"
        echo "==== $name: SKIPPED"
    else
        failed=$((failed + 1))
        failed_names="$failed_names [$name]"
        failed_logs="$failed_logs $log"
        echo "==== $name: FAILED"
    fi
}

lib="$B/lib/libcputrain.so.$VERSION"

# Tests never reach the network: a Hub id is looked up offline, in a cache
# of the build folder's own, unless a test starts its stand-in Hub on
# 127.0.0.1 and says so.
export HF_HUB_OFFLINE=1 HF_HOME="$PWD/$B/hf-home"
unset HF_ENDPOINT HF_TOKEN HF_TOKEN_PATH HF_HUB_CACHE HUGGINGFACE_HUB_CACHE HF_DATASETS_CACHE

# A locale with a decimal comma, built into the build folder, so the JSON
# and argument tests can prove that number text ignores LC_NUMERIC.
mkdir -p "$B/locale"
locpath=
if localedef -i de_DE -f UTF-8 "$B/locale/de_DE.UTF-8" >/dev/null 2>&1 ||
    [ -d "$B/locale/de_DE.UTF-8" ]; then
    locpath=$PWD/$B/locale
fi

run "C unit suites (Check)" env ${locpath:+LOCPATH="$locpath"} "$B/tests/check_all"
# The model, kernel and training suites again at every other kernel level
# this CPU runs (CPUTRAIN_ISA), so a level that is not this machine's
# default (bf16 on fp32 GEMMs, the generic oracle, and avx512bf16 where the
# default is avx512 because FMA outruns its dot product) is tested here too.
default_level=$(python3 -c 'import ctypes, sys
lib = ctypes.CDLL(sys.argv[1]); lib.ct_kernel_isa.restype = ctypes.c_char_p
print(lib.ct_kernel_isa().decode())' "$B/lib/libcputrain.so")
other_levels() {
    flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
    levels="avx2 generic"
    case $flags in *" avx512f "*) levels="avx512 $levels" ;; esac
    case $flags in *" avx512_bf16 "*) levels="avx512bf16 $levels" ;; esac
    case $flags in *" amx_bf16 "*) levels="amx $levels" ;; esac
    bad=""
    for isa in $levels; do
        [ "$isa" = "$default_level" ] && continue
        for suite in model packed attention ops chain train; do
            echo "CPUTRAIN_ISA=$isa $suite"
            CPUTRAIN_ISA=$isa CK_RUN_SUITE=$suite "$B/tests/check_all" || bad="$bad $isa/$suite"
        done
    done
    [ -z "$bad" ] || { echo "FAILED at the other levels:$bad"; return 1; }
}
run "C model, kernel and trainer suites at the other kernel levels (default: $default_level)" \
    other_levels
# The levels above this CPU's (avx512, avx512bf16, amx) built for AVX2 with
# their intrinsics emulated, so their kernels' code is tested on any CPU.
run "C kernel, model and trainer suites and the PyTorch oracle at the emulated levels" \
    env MAKE="$MAKE" PYTHON="$PYTHON" sh tests/emu/run.sh "$B"
run "C unit suites under AddressSanitizer and UBSan" env ${locpath:+LOCPATH="$locpath"} \
    "$MAKE" --no-print-directory -s check-asan B="$B"
# The libFuzzer harnesses of tests/fuzz/: built with clang (ASan, UBSan) in
# $B-fuzz, every corpus and past crash input replayed, then each fuzzed for
# 3 s. Where clang or its libFuzzer runtime is missing: skipped, said so.
fuzz_tests() {
    sh tests/fuzz/run.sh probe || return $?
    "$MAKE" --no-print-directory -s fuzz-check B="$B"
}
run "libFuzzer harnesses: corpora and past crash inputs replayed, 3 s of fuzzing each" fuzz_tests
run "one-way layers: no include of lib/ goes up or around" "$PYTHON" tests/layers.py lib
run "public headers as C99 and C++" sh tests/test_headers.sh
run "exported symbols = header = map" "$PYTHON" tests/abi_symbols.py "$lib" include/cputrain libcputrain.map
run "ABI against baseline" "$MAKE" --no-print-directory -s abi-check B="$B"
run "C++ wrapper" "$B/tests/test_wrapper"
run "Python bindings" env PYTHONPATH=bindings/python CPUTRAIN_LIBRARY="$lib" \
    "$PYTHON" -m unittest discover -s tests/python -t tests/python
run "Parquet reader against DuckDB and arrow-rs (npm): each file = its JSON lines, refusals" \
    env B="$B" PYTHON="$PYTHON" sh tests/formats/parquet.sh
run "Arrow IPC reader against apache-arrow (npm): stream and file formats = their JSON lines, refusals" \
    env B="$B" PYTHON="$PYTHON" sh tests/formats/arrow.sh
run "tokenizer against Hugging Face tokenizers (npm)" env B="$B" CC="$CC" PYTHON="$PYTHON" \
    sh tests/tokenizer/run.sh
run "demo learns: cputrain-qa on the generated SQuAD set, EM >= 60" \
    env B="$B" PYTHON="$PYTHON" sh tests/demo/run.sh
run "cputrain-qa command line (run_qa.py arguments, dataset folder, train, eval, v2)" \
    env B="$B" PYTHON="$PYTHON" sh tests/qa_cli/run.sh
run "cputrain-bench and the kernel benches' command lines: refusals, the profile read against --gemm-peak" \
    env B="$B" sh tests/bench_cli/run.sh
run "the guide's command with a Hub id, through a stand-in Hub on 127.0.0.1: download, offline, resume, one download per machine" \
    "$PYTHON" tests/hub/run.py "$B"
run "cputrain-qa on SIGINT / SIGTERM: checkpoint, exit 130 / 143, exact resume, second signal" \
    env PYTHONPATH=bindings/python CPUTRAIN_LIBRARY="$lib" \
    "$PYTHON" tests/qa_cli/signals.py "$B/bin/cputrain-qa" "$B/qa-signals-test"
run "cputrain-glue (run_glue.py): CSV / JSON, pairs, regression, multi-label, 2 ranks = 1" \
    "$PYTHON" tests/glue_cli/run.py "$B"
run "cputrain-ner (run_ner.py): IOB2 tags, conll2003 ids, seqeval scores, 2 ranks = 1" \
    "$PYTHON" tests/ner_cli/run.py "$B"
run "cputrain-mlm (run_mlm.py): blocks, lines, whole words, perplexity falls, 2 ranks = 1" \
    "$PYTHON" tests/mlm_cli/run.py "$B"
run "data-parallel training: N ranks x batch b = 1 rank x N*b (shm, tcp, mpi)" \
    env B="$B" PYTHON="$PYTHON" sh tests/dist/ddp_equiv.sh
run "sharded optimizer (optim_shard): 2/3/4 ranks = 1 rank, resume at another world size" \
    env B="$B" PYTHON="$PYTHON" sh tests/dist/optim_shard.sh
run "cputrain-run and elastic world size: a rank killed, 3 -> 2 -> 3 ranks = fixed 2 ranks" \
    env B="$B" PYTHON="$PYTHON" sh tests/dist/elastic.sh
run "cputrain-topo command line (synthetic 2-socket plan per rank, --apply read-back)" \
    env B="$B" sh tests/topo_cli/run.sh
run "ct_dist API under mpirun -n 2, 3 and from RANK/WORLD_SIZE (shm, tcp)" \
    env B="$B" sh tests/dist/mpi.sh
run "Ctrl-C under Open MPI's mpirun: with odls_base_sigkill_timeout a complete checkpoint, exact resume" \
    env B="$B" PYTHON="$PYTHON" sh tests/dist/mpi_sigint.sh
run "ct_dist API across two network namespaces (tcp, veth)" env B="$B" sh tests/dist/netns.sh
run "multi-node row: 4 ranks on 2 namespace hosts (torchrun env, PyTorchJob pods, mpirun) = 1 x 8" \
    env B="$B" PYTHON="$PYTHON" sh tests/dist/multinode.sh
run "mpi plugins (Open MPI, MPICH ABI) under their mpirun -n 2, 3, 4: collectives, a stuck rank's timeout" \
    "$MAKE" --no-print-directory -s check-mpi B="$B"
run "the README's runnable commands (the guide's, one rank and mpirun -n 2; Python) against a stand-in Hub" \
    "$PYTHON" tests/docs/run.py "$B"
run "the container image's install steps (deploy/install.sh) into a staging prefix: tools, Python package" \
    env B="$B" PYTHON="$PYTHON" sh tests/deploy/run.sh
run "pip install of bindings/python into a venv (offline), a training step, without numpy, uninstall" \
    env B="$B" PYTHON="$PYTHON" sh tests/venv/run.sh
run "install + pkg-config (shared, rpath, static beside the .so), Python package, uninstall" \
    env PYTHON="$PYTHON" sh tests/pkgconfig/run.sh

for log in $failed_logs; do
    echo "==== what failed in$(head -n 1 "$log" | cut -c5-) ($log):"
    # with the lines before each failure: a rank's log tail, a difference
    grep -B 10 -E ':[FE]:|FAIL|[Ee]rror|not ok' "$log" | tail -n 40
    tail -n 3 "$log"
done
cpu=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)
isa=$(grep -o -w -E 'avx2|avx512f|avx512_bf16|amx_tile' /proc/cpuinfo 2>/dev/null | sort -u | tr '\n' ' ')
echo "check ran on: ${cpu:-unknown CPU} (${isa:-no avx2}), $(nproc) CPUs"
[ -z "$failed_names" ] || echo "failed groups:$failed_names"
[ -z "$skipped_names" ] || echo "skipped groups:$skipped_names"
echo "check: $passed passed, $failed failed${skipped_names:+, $skipped skipped}"
[ "$failed" -eq 0 ]
