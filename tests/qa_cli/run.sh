#!/bin/sh
# Shell tests of tools/cputrain-qa (built as $B/bin/cputrain-qa), run_qa.py's
# C twin: --help, argument errors, --dataset_name with a local folder, a
# one-or-two-step training run on tiny fixtures from scratch (--config_name,
# --tokenizer_name), evaluation of the saved model alone, and SQuAD v2.0
# output. Every fixture is written here (a ten-word vocabulary, a two-layer
# 16-wide BERT), so the whole run takes a few seconds. Expects B and PYTHON.
# Ends with "qa_cli: N passed, M failed"; exit status 1 when any failed.
set -u
: "${B:=build}" "${PYTHON:=/usr/bin/python3}"
qa=$B/bin/cputrain-qa
dir=$B/qa-cli-test
passed=0
failed=0

ok() { passed=$((passed + 1)); echo "qa_cli: ok: $1"; }
bad() { failed=$((failed + 1)); echo "qa_cli: FAILED: $1"; }
# check NAME COMMAND...: the command must succeed
check() {
    name=$1
    shift
    if "$@"; then ok "$name"; else bad "$name"; fi
}
# contains FILE TEXT: FILE holds TEXT (a fixed string)
contains() { grep -qF -- "$2" "$1" || { echo "  '$2' not in $1:"; sed 's/^/  | /' "$1"; return 1; }; }

[ -x "$qa" ] || { echo "qa_cli: $qa is not built"; echo "qa_cli: 0 passed, 1 failed"; exit 1; }
rm -rf "$dir"
mkdir -p "$dir/data" "$dir/tok" "$dir/squad" "$dir/empty"

# ---- fixtures -----------------------------------------------------------------
printf '%s\n' '[PAD]' '[UNK]' '[CLS]' '[SEP]' '[MASK]' where did ana bo go live in paris rome oslo \
    lima to . what is city > "$dir/tok/vocab.txt"
printf '{"do_lower_case": true, "model_max_length": 64}\n' > "$dir/tok/tokenizer_config.json"
cat > "$dir/data/config.json" <<'JSON'
{"architectures": ["BertForQuestionAnswering"], "model_type": "bert", "vocab_size": 21,
 "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
 "intermediate_size": 32, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
 "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 64, "type_vocab_size": 2,
 "initializer_range": 0.02, "layer_norm_eps": 1e-12, "pad_token_id": 0}
JSON
cat > "$dir/squad/train.json" <<'JSON'
{"version": "1.1", "data": [{"title": "t", "paragraphs": [
 {"context": "ana did live in paris . bo did go to rome .", "qas": [
  {"id": "t1", "question": "where did ana live", "answers": [{"text": "paris", "answer_start": 16}]},
  {"id": "t2", "question": "where did bo go", "answers": [{"text": "rome", "answer_start": 37}]}]},
 {"context": "bo did live in oslo . ana did go to lima .", "qas": [
  {"id": "t3", "question": "where did bo live", "answers": [{"text": "oslo", "answer_start": 15}]},
  {"id": "t4", "question": "where did ana go", "answers": [{"text": "lima", "answer_start": 36}]}]}
]}]}
JSON
cat > "$dir/squad/validation.json" <<'JSON'
{"version": "1.1", "data": [{"title": "v", "paragraphs": [
 {"context": "ana did live in rome . bo did go to oslo .", "qas": [
  {"id": "v1", "question": "where did ana live", "answers": [{"text": "rome", "answer_start": 16}]},
  {"id": "v2", "question": "where did bo go", "answers": [{"text": "oslo", "answer_start": 36}]}]}
]}]}
JSON
cat > "$dir/data/validation_v2.json" <<'JSON'
{"version": "v2.0", "data": [{"title": "v", "paragraphs": [
 {"context": "ana did live in rome . bo did go to oslo .", "qas": [
  {"id": "w1", "question": "where did ana live", "is_impossible": false,
   "answers": [{"text": "rome", "answer_start": 16}]},
  {"id": "w2", "question": "what city did bo live in", "is_impossible": true, "answers": []}]}
]}]}
JSON
common="--max_seq_length 24 --doc_stride 8 --per_device_train_batch_size 2 \
--per_device_eval_batch_size 2 --save_strategy no --seed 42 --disable_tqdm --use_cpu"

# The fixtures are right: every answer is at its answer_start.
for f in "$dir/squad/train.json" "$dir/squad/validation.json" "$dir/data/validation_v2.json"; do
    check "fixture $(basename "$f") is consistent" "$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
for a in d["data"]:
    for p in a["paragraphs"]:
        for q in p["qas"]:
            for x in q["answers"]:
                s = x["answer_start"]
                assert p["context"][s:s + len(x["text"])] == x["text"], q["id"]' "$f"
done

# ---- --help -------------------------------------------------------------------
"$qa" --help > "$dir/help.txt" 2>&1
rc=$?
check "--help exits 0" [ "$rc" -eq 0 ]
missing=
for a in model_name_or_path config_name tokenizer_name dataset_name train_file validation_file \
    max_seq_length doc_stride max_train_samples max_eval_samples n_best_size \
    max_answer_length version_2_with_negative null_score_diff_threshold pad_to_max_length \
    output_dir do_train do_eval num_train_epochs max_steps learning_rate \
    per_device_train_batch_size per_device_eval_batch_size seed save_strategy; do
    grep -q -- "--$a\b" "$dir/help.txt" || missing="$missing $a"
done
check "--help lists run_qa's arguments and TrainingArguments" [ -z "$missing" ]
[ -z "$missing" ] || echo "  missing from --help:$missing"

# ---- argument errors ----------------------------------------------------------
"$qa" --no_such_argument 3 --output_dir "$dir/x" > "$dir/unknown.txt" 2>&1
rc=$?
check "unknown argument exits 2" [ "$rc" -eq 2 ]
check "unknown argument is named" contains "$dir/unknown.txt" "unknown argument --no_such_argument"

"$qa" --dataset_name squad --dataset_dir "$dir/empty" --config_name "$dir/data/config.json" \
    --tokenizer_name "$dir/tok" --do_train --output_dir "$dir/x" > "$dir/nodata.txt" 2>&1
rc=$?
check "--dataset_name with an empty --dataset_dir fails" [ "$rc" -ne 0 ]
check "  ... naming the folder" contains "$dir/nodata.txt" "$dir/empty"
check "  ... and the files looked for" contains "$dir/nodata.txt" "train.json, train.jsonl, train-v1.1.json"
check "  ... and saying nothing is downloaded" contains "$dir/nodata.txt" "nothing is downloaded"
[ ! -e "$dir/x" ]
check "  ... writing no output folder" [ $? -eq 0 ]

# ---- training from a --dataset_name folder --------------------------------------
# shellcheck disable=SC2086
"$qa" --dataset_name squad --dataset_dir "$dir/squad" --config_name "$dir/data/config.json" \
    --tokenizer_name "$dir/tok" --do_train --max_steps 2 --learning_rate 1e-3 $common \
    --output_dir "$dir/trained" > "$dir/train.txt" 2>&1
rc=$?
check "--dataset_name squad with train.json trains (2 steps)" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || sed 's/^/  | /' "$dir/train.txt"
check "  ... on the folder's 4 examples" contains "$dir/train.txt" "training: 4 examples"
! grep -q "not found at their answer_start" "$dir/train.txt"
check "  ... with no answer_start warning" [ $? -eq 0 ]
for f in config.json model.safetensors train_results.json trainer_state.json; do
    check "  ... writes $f" [ -s "$dir/trained/$f" ]
done
check "  ... ran 2 steps" "$PYTHON" -c '
import json, sys
s = json.load(open(sys.argv[1]))
sys.exit(0 if s["global_step"] == 2 else 1)' "$dir/trained/trainer_state.json"

# ---- evaluation only, of the saved model ----------------------------------------
# shellcheck disable=SC2086
"$qa" --model_name_or_path "$dir/trained" --tokenizer_name "$dir/tok" --dataset_name squad \
    --dataset_dir "$dir/squad" --do_eval $common --output_dir "$dir/eval" > "$dir/eval.txt" 2>&1
rc=$?
check "--do_eval alone on the trained model" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || sed 's/^/  | /' "$dir/eval.txt"
check "  ... writes eval_results.json with eval_exact_match, eval_f1, eval_samples" "$PYTHON" -c '
import json, sys
m = json.load(open(sys.argv[1]))
ok = all(k in m for k in ("eval_exact_match", "eval_f1", "eval_samples"))
ok = ok and 0 <= m["eval_exact_match"] <= 100 and 0 <= m["eval_f1"] <= 100
ok = ok and m["eval_samples"] == 2 and "epoch" not in m
sys.exit(0 if ok else print(m) or 1)' "$dir/eval/eval_results.json"
check "  ... writes eval_predictions.json for both questions" "$PYTHON" -c '
import json, sys
p = json.load(open(sys.argv[1]))
sys.exit(0 if sorted(p) == ["v1", "v2"] and all(isinstance(v, str) for v in p.values()) else 1)' \
    "$dir/eval/eval_predictions.json"
check "  ... and eval_nbest_predictions.json" [ -s "$dir/eval/eval_nbest_predictions.json" ]
check "  ... but no eval_null_odds.json (v1)" [ ! -e "$dir/eval/eval_null_odds.json" ]

# ---- SQuAD v2.0 -----------------------------------------------------------------
# shellcheck disable=SC2086
"$qa" --model_name_or_path "$dir/trained" --tokenizer_name "$dir/tok" \
    --validation_file "$dir/data/validation_v2.json" --version_2_with_negative --do_eval \
    $common --output_dir "$dir/eval_v2" > "$dir/eval_v2.txt" 2>&1
rc=$?
check "--version_2_with_negative --do_eval" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || sed 's/^/  | /' "$dir/eval_v2.txt"
check "  ... writes eval_null_odds.json for both questions" "$PYTHON" -c '
import json, sys
p = json.load(open(sys.argv[1]))
sys.exit(0 if sorted(p) == ["w1", "w2"] else 1)' "$dir/eval_v2/eval_null_odds.json"
check "  ... and the squad_v2 metrics" "$PYTHON" -c '
import json, sys
m = json.load(open(sys.argv[1]))
ok = all(k in m for k in ("eval_exact", "eval_f1", "eval_total", "eval_HasAns_exact",
                          "eval_NoAns_exact", "eval_best_f1", "eval_samples"))
sys.exit(0 if ok and m["eval_total"] == 2 else print(m) or 1)' "$dir/eval_v2/eval_results.json"

echo "qa_cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
