#!/bin/sh
# One bert-base-uncased QA training step (forward + backward, batch 8, seq 128)
# with the library and with PyTorch on the same machine in the same run,
# alternating twice (the machine is shared and noisy), then the ratios of the
# medians. usage: bench/compare_bert.sh [BUILD_DIR]   (env: PYTHON, STEPS, THREADS;
# TASK=mlm|cls|ner: the masked-LM, sequence- or token-classification head
# instead, labelled alike on both sides (cputrain-bench's labels);
# CPUTRAIN_ISA=avx512 on a bf16 CPU measures bf16 emulated against fp32;
# TORCH_PRECISION: "bf16 fp32", or fp32 alone by default on a CPU without
# bf16 instructions, where PyTorch's bf16 autocast takes minutes a step)
set -eu
here=$(dirname "$0")
build=${1:-build}
python=${PYTHON:-/usr/bin/python3}
steps=${STEPS:-5}
case ${TASK:-qa} in
qa) ours_task=qa torch_task=question-answering ;;
mlm) ours_task=mlm torch_task=masked-lm ;;
cls) ours_task=cls torch_task=sequence-classification ;;
ner) ours_task=ner torch_task=token-classification ;;
*) echo "compare_bert.sh: TASK must be qa, mlm, cls or ner" >&2; exit 2 ;;
esac
threads=${THREADS:-2}
out=$(mktemp)
trap 'rm -f "$out"' EXIT INT TERM
if [ -n "${TORCH_PRECISION:-}" ]; then
    torch_precision=$TORCH_PRECISION
elif sh "$here/cpu_has_bf16.sh"; then
    torch_precision="bf16 fp32"
else
    torch_precision=fp32
    echo "# torch bf16 left out: no bf16 instructions here (TORCH_PRECISION=\"bf16 fp32\" runs it)"
fi

for round in 1 2; do
    for prec in bf16 fp32; do
        "$build/bin/cputrain-bench" --task "$ours_task" --precision "$prec" --steps "$steps" \
            --threads "$threads" |
            awk -v p="$prec" '/^step time/ { print "ours", p, $4 }' | tee -a "$out"
    done
    # shellcheck disable=SC2086 # one argument per precision
    "$python" "$here/torch_bert_step.py" --task "$torch_task" --steps "$steps" \
        --threads "$threads" \
        --precision $torch_precision |
        awk '{ print $1, $2, $4 }' | tee -a "$out"
done
echo "# mean of the two rounds' medians (seconds per step; lower is better)"
awk '{ key = $1 " " $2; n[key]++; v[key, n[key]] = $3 }
     END {
         for (k in n) { m = 0; for (i = 1; i <= n[k]; i++) m += v[k, i]; t[k] = m / n[k] }
         if ("torch bf16" in t)
             printf "ours bf16 %.3f s, torch bf16 autocast %.3f s: ours is %.2fx faster\n",
                    t["ours bf16"], t["torch bf16"], t["torch bf16"] / t["ours bf16"]
         else
             printf "ours bf16 %.3f s, torch fp32 (its best here) %.3f s: ours is %.2fx faster\n",
                    t["ours bf16"], t["torch fp32"], t["torch fp32"] / t["ours bf16"]
         printf "ours fp32 %.3f s, torch fp32 %.3f s: ours is %.2fx faster\n",
                t["ours fp32"], t["torch fp32"], t["torch fp32"] / t["ours fp32"]
         printf "ours bf16 / ours fp32: %.3f (kernels %s)\n", t["ours bf16"] / t["ours fp32"],
                isa
     }' isa="${CPUTRAIN_ISA:-best}" "$out"
