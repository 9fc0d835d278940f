#!/bin/sh
# run.sh BUILD_DIR: the kernel, model and trainer suites, and the PyTorch
# oracle of the model (bert-base's size too), at each kernel level this
# CPU lacks (avx512, avx512bf16, amx), on the library that `make
# emulated-build` makes in BUILD_DIR-emu: those levels' code compiled for
# AVX2, their intrinsics emulated (x86_emulated.h). The levels the CPU has
# run natively in `make check` already. Exit status 77, before building
# anything, when there is nothing to emulate here or no AVX2 to emulate
# on. make check runs this script itself, so that status reaches its
# tally as a skip (make would turn it into a failure).
set -u
build=${1:?usage: run.sh BUILD_DIR}
b=$build-emu
: "${PYTHON:=/usr/bin/python3}" "${MAKE:=make}"

flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
case $flags in
*" avx2 "*" fma "* | *" fma "*" avx2 "*) ;;
*) echo "emulated levels: SKIPPED: this CPU has no AVX2 and FMA to emulate them on"; exit 77 ;;
esac
levels=""
case $flags in *" avx512f "*) ;; *) levels="$levels avx512" ;; esac
case $flags in *" avx512_bf16 "*) ;; *) levels="$levels avx512bf16" ;; esac
case $flags in *" amx_bf16 "*) ;; *) levels="$levels amx" ;; esac
if [ -z "$levels" ]; then
    echo "emulated levels: SKIPPED: this CPU runs every level natively"
    exit 77
fi

echo "emulated levels:$levels (building $b)"
"$MAKE" --no-print-directory -s emulated-build B="$build" || exit 1

bad=""
for isa in $levels; do
    for suite in kernels ops attention chain packed blocked model train; do
        echo "emulated CPUTRAIN_ISA=$isa $suite"
        CPUTRAIN_ISA=$isa CK_RUN_SUITE=$suite "$b/tests/check_all" || bad="$bad $isa/$suite"
    done
    # with bert-base's own shapes, which reach the blocked and AMX paths
    echo "emulated CPUTRAIN_ISA=$isa: the model against PyTorch, bert-base's size included"
    PYTHONPATH=bindings/python:tests/python CPUTRAIN_LIBRARY="$PWD/$b/lib/libcputrain.so" \
        CPUTRAIN_ISA=$isa CPUTRAIN_SLOW_TESTS=1 "$PYTHON" -m unittest test_model_torch ||
        bad="$bad $isa/torch"
done
[ -z "$bad" ] || { echo "FAILED at the emulated levels:$bad"; exit 1; }
echo "emulated levels passed:$levels"
