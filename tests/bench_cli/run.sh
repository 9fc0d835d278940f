#!/bin/sh
# Shell tests of tools/cputrain-bench's command line (built as
# $B/bin/cputrain-bench) and of the kernel benches' ($B/bench/*): every
# malformed or contradictory argument is refused with exit status 2 and a
# line naming it, before any work; a profile reads the whole step against
# --gemm-peak when that figure is above the run's own probe, and only
# then. A two-layer 16-wide BERT written here keeps each run under a few
# seconds. Expects B.
# Ends with "bench_cli: N passed, M failed"; exit status 1 when any failed.
set -u
: "${B:=build}"
bench=$B/bin/cputrain-bench
dir=$B/bench-cli-test
passed=0
failed=0

ok() { passed=$((passed + 1)); echo "bench_cli: ok: $1"; }
bad() { failed=$((failed + 1)); echo "bench_cli: FAILED: $1"; }
# contains FILE TEXT: FILE holds TEXT (a fixed string)
contains() { grep -qF -- "$2" "$1" || { echo "  '$2' not in $1:"; sed 's/^/  | /' "$1"; return 1; }; }

[ -x "$bench" ] || { echo "bench_cli: $bench is not built"; echo "bench_cli: 0 passed, 1 failed"; exit 1; }
rm -rf "$dir"
mkdir -p "$dir"
cat > "$dir/config.json" <<'JSON'
{"architectures": ["BertForQuestionAnswering"], "model_type": "bert", "vocab_size": 30,
 "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
 "intermediate_size": 32, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
 "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 64, "type_vocab_size": 2,
 "initializer_range": 0.02, "layer_norm_eps": 1e-12, "pad_token_id": 0}
JSON
tiny="--model $dir/config.json --batch 2 --seq 16 --steps 2 --warmup 0"

# refuses TEXT PROGRAM ARGS...: exit 2, TEXT on stderr, nothing on stdout
# (no work began)
refuses() {
    text=$1
    prog=$2
    shift 2
    "$prog" "$@" > "$dir/out.txt" 2> "$dir/err.txt"
    rc=$?
    name="${prog##*/} refuses: $*"
    if [ "$rc" -eq 2 ] && [ ! -s "$dir/out.txt" ] && contains "$dir/err.txt" "$text"; then
        ok "$name"
    else
        bad "$name (exit $rc)"
        sed 's/^/  | /' "$dir/out.txt" "$dir/err.txt"
    fi
}

# refused ARGS TEXT: cputrain-bench refuses ARGS (split at spaces)
refused() {
    text=$2
    # shellcheck disable=SC2086 # the arguments are split on purpose
    set -- $1
    refuses "$text" "$bench" "$@"
}

refused "--batch x" "--batch x is not a whole number from 1 to"
refused "--batch 0" "--batch 0 is not a whole number from 1 to"
refused "--seq 16k" "--seq 16k is not a whole number from 1 to"
refused "--steps -1" "--steps -1 is not a whole number from 1 to"
refused "--warmup 1.5" "--warmup 1.5 is not a whole number from 0 to"
refused "--threads 99999999999" "--threads 99999999999 is not a whole number from 0 to 4096"
refused "--threads 5000" "--threads 5000 is not a whole number from 0 to 4096"
refused "--steps 2000000" "--steps 2000000 is not a whole number from 1 to 1000000"
refused "--precision fp16" "--precision fp16 is not fp32 or bf16"
refused "--task summarization" "--task summarization is not qa, cls, mlm or ner"
refused "--batch 100000 --seq 100000" "is more tokens than one batch here can hold"
refused "--eval --optimizer" "--optimizer applies AdamW after backward"
refused "--gemm-peak 0 --profile" "--gemm-peak 0 is not a positive number of GFLOP/s"
refused "--gemm-peak inf --profile" "--gemm-peak inf is not a positive number of GFLOP/s"
refused "--gemm-peak 12x --profile" "--gemm-peak 12x is not a positive number of GFLOP/s"
refused "--gemm-peak 100" "--gemm-peak reads a profile: it needs --profile"
refused "--no-such-option 1" "usage: cputrain-bench"
refused "--steps" "usage: cputrain-bench"

# the kernel benches (bench/*.c, built by make check): numbers read whole,
# names they do not have refused
refuses "-t x is not a whole number from 1 to 1024" "$B/bench/gemm_bench" -t x
refuses "-s 10x10 is not a shape MxNxK of positive sizes" "$B/bench/gemm_bench" -s 10x10
refuses "-s 8x8x8x is not a shape MxNxK of positive sizes" "$B/bench/gemm_bench" -s 8x8x8x
refuses "-v nosuch is not a variant this CPU runs" "$B/bench/gemm_bench" -v nosuch
refuses "-l nosuch is not a level this CPU runs" "$B/bench/attn_bench" -l nosuch
refuses "-r 64 is not a whole number from 1 to 63" "$B/bench/attn_bench" -r 64
refuses "-k nosuch is not one of its kernels: layernorm_forward" "$B/bench/ops_bench" -k nosuch
refuses "-r 0 is not a whole number from 1 to 100000" "$B/bench/chain_bench" -r 0
refuses "step 0 is not a whole number from 1 to" "$B/bench/gelu_accuracy" 0

# a figure far above any probe: the step is read against it too
# shellcheck disable=SC2086
"$bench" $tiny --optimizer --profile --gemm-peak 1e9 > "$dir/given.txt" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && contains "$dir/given.txt" "of the GEMM peak" &&
    contains "$dir/given.txt" "of the best GEMM figure given (--gemm-peak 1000000000.0 GFLOP/s)"; then
    ok "a --gemm-peak above the probe: the step against it too"
else
    bad "a --gemm-peak above the probe: the step against it too (exit $rc)"
fi
# far below: the probe is the best figure, and the line says nothing more
# shellcheck disable=SC2086
"$bench" $tiny --profile --gemm-peak 1e-6 > "$dir/below.txt" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && contains "$dir/below.txt" "of the GEMM peak" &&
    ! grep -q "best GEMM figure given" "$dir/below.txt"; then
    ok "a --gemm-peak below the probe: the probe's line alone"
else
    bad "a --gemm-peak below the probe: the probe's line alone (exit $rc)"
    sed 's/^/  | /' "$dir/below.txt"
fi
# no effect, said once: checkpointing in a forward-only run
# shellcheck disable=SC2086
"$bench" $tiny --eval --gradient_checkpointing > "$dir/eval.txt" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && contains "$dir/eval.txt" "--gradient_checkpointing has no effect with --eval" &&
    contains "$dir/eval.txt" "forward only"; then
    ok "--gradient_checkpointing with --eval: runs, warns it has no effect"
else
    bad "--gradient_checkpointing with --eval: runs, warns it has no effect (exit $rc)"
fi

echo "bench_cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
