# Sourced by tests/qa_cli/run.sh (its helpers, fixtures and $qa): every
# argument's fate (issue 12), Hub ids, max_seq_length clamped up front, and
# quiet ordered logs. Each run here is a one-step training or a two-example
# evaluation of the tiny fixtures.

# ---- --help shows each argument's fate ------------------------------------------------
for want in "--dataloader_num_workers" "--push_to_hub" "--cache_dir" "--pad_to_max_length" \
    "--label_smoothing_factor" "--include_tokens_per_second" "Refused: nothing is uploaded" \
    "No effect: features are built in memory" "run_qa.py arguments accepted with no effect here"; do
    check "--help shows $want" contains "$dir/help.txt" "$want"
done

# ---- no effect: accepted with one warning saying why ----------------------------------
# shellcheck disable=SC2086
"$qa" $train_args $common --max_steps 1 --overwrite_output_dir --output_dir "$dir/fates" \
    --overwrite_cache true --pad_to_max_length false --dataloader_num_workers 4 \
    --preprocessing_num_workers 8 > "$dir/fates.txt" 2>&1
rc=$?
check "no-effect arguments are accepted (exit 0)" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || sed 's/^/  | /' "$dir/fates.txt"
check "  ... --overwrite_cache says why" contains "$dir/fates.txt" \
    "--overwrite_cache true has no effect here: features are built in memory"
check "  ... --pad_to_max_length false says why" contains "$dir/fates.txt" \
    "--pad_to_max_length false has no effect here: padding is never computed"
check "  ... --dataloader_num_workers says why" contains "$dir/fates.txt" \
    "--dataloader_num_workers 4 has no effect here"
check "  ... --preprocessing_num_workers says why" contains "$dir/fates.txt" \
    "--preprocessing_num_workers 8 has no effect here"
check "  ... each once" [ "$(grep -c 'has no effect here' "$dir/fates.txt")" -eq 4 ]
check "  ... placement is said once" [ "$(grep -c 'placement' "$dir/fates.txt")" -eq 1 ]
# stdout is line-buffered: the program's own line comes before the trainer's
first_own=$(grep -n '^training: 4 examples' "$dir/fates.txt" | cut -d: -f1)
first_lib=$(grep -n 'info: training' "$dir/fates.txt" | cut -d: -f1)
check "  ... stdout and stderr lines in the order written" \
    [ "${first_own:-999}" -lt "${first_lib:-0}" ]

# ---- refused: an error with the reason, before any work --------------------------------
for case in "--push_to_hub:Hub's CLI" "--torch_compile true:kernels are compiled" \
    "--save_safetensors false:only safetensors is written" \
    "--fsdp full_shard:every rank holds the whole model"; do
    arg=${case%%:*}
    why=${case#*:}
    rm -rf "$dir/refused"
    # shellcheck disable=SC2086
    "$qa" $train_args $common --max_steps 1 --output_dir "$dir/refused" $arg \
        > "$dir/refused.txt" 2>&1
    rc=$?
    check "$arg is refused (exit 2)" [ "$rc" -eq 2 ]
    check "  ... with the reason" contains "$dir/refused.txt" "$why"
    check "  ... before any work" [ ! -e "$dir/refused" ]
done
# shellcheck disable=SC2086
"$qa" $train_args $common --max_steps 1 --overwrite_output_dir --output_dir "$dir/fates" \
    --save_safetensors true --push_to_hub false > "$dir/defaults.txt" 2>&1
rc=$?
check "refused arguments at their default are accepted silently" [ "$rc" -eq 0 ]
! grep -q "refused\|no effect" "$dir/defaults.txt"
check "  ... with no warning" [ $? -eq 0 ]

# ---- Hub ids --------------------------------------------------------------------------
eval_args="--tokenizer_name $dir/tok --validation_file $dir/squad/validation.json --do_eval \
--max_seq_length 24 --doc_stride 8 --per_device_eval_batch_size 2 --disable_tqdm"
# shellcheck disable=SC2086
HF_HUB_OFFLINE=1 "$qa" $eval_args --model_name_or_path bert-tiny --output_dir "$dir/hub" \
    > "$dir/hub.txt" 2>&1
rc=$?
check "a built-in name the Hub does not give (offline, not cached) runs (exit 0)" [ "$rc" -eq 0 ]
check "  ... saying loudly that its weights are random" contains "$dir/hub.txt" "RANDOM weights"
check "  ... why the Hub did not give it, and how to get the real ones" contains "$dir/hub.txt" \
    "forbids the network: run once with network access"
# shellcheck disable=SC2086
HF_HUB_OFFLINE=1 "$qa" $eval_args --model_name_or_path some-org/some-model \
    --output_dir "$dir/hub2" > "$dir/hub2.txt" 2>&1
rc=$?
check "a Hub id that is not built in and not cached fails (offline)" [ "$rc" -ne 0 ]
check "  ... saying what was looked at" contains "$dir/hub2.txt" \
    "some-org/some-model is not a local folder; as a Hub id: some-org/some-model at revision 'main' is not in the Hub cache"
# shellcheck disable=SC2086
"$qa" $eval_args --model_name_or_path "$dir/no/such/folder" --output_dir "$dir/hub2" \
    > "$dir/hub3.txt" 2>&1
check "a wrong path gets its own message" contains "$dir/hub3.txt" "no such local folder"
# shellcheck disable=SC2086
"$qa" $eval_args --model_name_or_path "$dir/empty" --output_dir "$dir/hub2" > "$dir/hub4.txt" 2>&1
check "a folder without config.json says so" contains "$dir/hub4.txt" "the folder has no config.json"

# ---- max_seq_length clamped to the model, up front -----------------------------------------
# shellcheck disable=SC2086
"$qa" $train_args $common --max_steps 1 --overwrite_output_dir --output_dir "$dir/fates" \
    --max_seq_length 100 > "$dir/clamp.txt" 2>&1
rc=$?
check "--max_seq_length above the model's 64 trains (exit 0)" [ "$rc" -eq 0 ]
check "  ... clamped with run_qa's warning" contains "$dir/clamp.txt" \
    "the max_seq_length passed (100) is larger than the maximum length for the model (64)"

# ---- implemented: include_tokens_per_second, bf16_full_eval, log_level --------------------
check "--include_tokens_per_second is off by default" "$PYTHON" -c '
import json, sys
sys.exit("train_tokens_per_second" in json.load(open(sys.argv[1])))' "$dir/fates/train_results.json"
# shellcheck disable=SC2086
"$qa" $train_args $common --max_steps 1 --overwrite_output_dir --output_dir "$dir/fates" \
    --include_tokens_per_second --log_level error > "$dir/tps.txt" 2>&1
check "--include_tokens_per_second writes train_tokens_per_second" "$PYTHON" -c '
import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(0 if r["train_tokens_per_second"] > 0 else 1)' "$dir/fates/train_results.json"
! grep -q "info:" "$dir/tps.txt"
check "--log_level error silences the library's information" [ $? -eq 0 ]
# shellcheck disable=SC2086
"$qa" $eval_args --model_name_or_path "$dir/trained" --output_dir "$dir/fp32eval" \
    > "$dir/fp32eval.txt" 2>&1
# shellcheck disable=SC2086
"$qa" $eval_args --model_name_or_path "$dir/trained" --output_dir "$dir/bf16eval" \
    --bf16_full_eval > "$dir/bf16eval.txt" 2>&1
rc=$?
check "--bf16_full_eval evaluates (exit 0)" [ "$rc" -eq 0 ]
! cmp -s "$dir/fp32eval/eval_nbest_predictions.json" "$dir/bf16eval/eval_nbest_predictions.json"
check "  ... with bf16 products (the n-best probabilities differ from fp32's)" [ $? -eq 0 ]

# ---- two ranks: only the main process prints by default ----------------------------------
. "$(dirname "$0")/../dist/master_port.sh"
port=$(first_master_port)
rm -rf "$dir/ranks"
for r in 0 1; do
    # shellcheck disable=SC2086
    RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
        MASTER_PORT=$port timeout 120 "$qa" $train_args $common --max_steps 2 \
        --per_device_train_batch_size 1 --output_dir "$dir/ranks" --dataloader_num_workers 3 \
        > "$dir/rank$r.txt" 2>&1 &
done
wait
check "two ranks train" [ -s "$dir/ranks/train_results.json" ]
check "  ... rank 0 gives the argument's warning" contains "$dir/rank0.txt" \
    "--dataloader_num_workers 3 has no effect here"
check "  ... and its start-up lines" contains "$dir/rank0.txt" "info: placement"
check "  ... rank 1 prints nothing (log_level_replica warning, nothing to warn about)" \
    [ ! -s "$dir/rank1.txt" ]
if [ -s "$dir/rank1.txt" ]; then sed "s/^/  | /" "$dir/rank1.txt"; fi

# ---- one bf16 message, only when bf16 is asked for and emulated -----------------------------
for x in "" "--bf16"; do
    # shellcheck disable=SC2086
    CPUTRAIN_ISA=generic "$qa" $train_args $common --max_steps 1 --overwrite_output_dir \
        --output_dir "$dir/fates" $x > "$dir/bf16msg.txt" 2>&1
    n=$(grep -ci "bf16" "$dir/bf16msg.txt")
    want=0
    [ -n "$x" ] && want=1
    check "bf16 messages on the generic level with '${x:-fp32}': $want" [ "$n" -eq "$want" ]
done

# ---- a compatibility field set to a value that changes nothing says so ----------------------
# shellcheck disable=SC2086
"$qa" $train_args $common --max_steps 1 --overwrite_output_dir --output_dir "$dir/fates" \
    --group_by_length --length_column_name n_tokens > "$dir/lencol.txt" 2>&1
check "--length_column_name with group_by_length says it has no effect" contains \
    "$dir/lencol.txt" "--length_column_name n_tokens has no effect here"
