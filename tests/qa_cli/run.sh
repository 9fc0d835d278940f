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
# (two abbreviated, as argparse takes them: --doc_str is run_qa's
# --doc_stride, --per_device_eval TrainingArguments' batch size)
common="--max_seq_length 24 --doc_str 8 --per_device_train_batch_size 2 \
--per_device_eval 2 --save_strategy no --seed 42 --disable_tqdm --use_cpu"

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
    per_device_train_batch_size per_device_eval_batch_size seed save_strategy \
    test_file max_predict_samples do_predict load_best_model_at_end metric_for_best_model \
    greater_is_better; do
    grep -q -- "--$a\b" "$dir/help.txt" || missing="$missing $a"
done
check "--help lists run_qa's arguments and TrainingArguments" [ -z "$missing" ]
[ -z "$missing" ] || echo "  missing from --help:$missing"

# ---- argument errors ----------------------------------------------------------
"$qa" --no_such_argument 3 --output_dir "$dir/x" > "$dir/unknown.txt" 2>&1
rc=$?
check "unknown argument exits 2" [ "$rc" -eq 2 ]
check "unknown argument is named" contains "$dir/unknown.txt" "unknown argument --no_such_argument"
# HfArgumentParser's habits: a typo gets a suggestion, an unambiguous prefix
# is the argument it begins (argparse's allow_abbrev), an ambiguous one is
# refused naming the candidates, --version says the version
"$qa" --learning_rte 3e-5 --output_dir "$dir/x" > "$dir/typo.txt" 2>&1
rc=$?
check "a typo exits 2 with a suggestion" eval '[ "$rc" -eq 2 ] &&
    contains "$dir/typo.txt" "did you mean --learning_rate?"'
"$qa" --do --output_dir "$dir/x" > "$dir/ambiguous.txt" 2>&1
rc=$?
check "an ambiguous prefix is refused naming the candidates" eval '[ "$rc" -eq 2 ] &&
    contains "$dir/ambiguous.txt" "ambiguous option: could match --do_train, --do_eval"'
"$qa" --version > "$dir/version.txt" 2>&1
rc=$?
major=$(sed -n 's/^#define CT_VERSION_MAJOR *//p' include/cputrain/core.h)
check "--version prints the library's version" eval '[ "$rc" -eq 0 ] &&
    contains "$dir/version.txt" "cputrain-qa (libcputrain $major."'

# A tokenizer with more ids than the model's embedding: refused before any
# data is read, naming both sizes.
sed 's/"vocab_size": 21/"vocab_size": 12/' "$dir/data/config.json" > "$dir/small_vocab.json"
"$qa" --dataset_name squad --dataset_dir "$dir/squad" --config_name "$dir/small_vocab.json" \
    --tokenizer_name "$dir/tok" --do_train --output_dir "$dir/vocab" > "$dir/vocab.txt" 2>&1
rc=$?
check "a tokenizer larger than the embedding is refused at load, naming both sizes" eval \
    '[ "$rc" -ne 0 ] && contains "$dir/vocab.txt" "the tokenizer has 21 tokens but the model'"'"'s embedding only 12" &&
     ! grep -q "Running tokenizer" "$dir/vocab.txt"'

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
for f in vocab.txt tokenizer_config.json special_tokens_map.json tokenizer.json; do
    check "  ... saves the tokenizer's $f" [ -s "$dir/trained/$f" ]
done
# A model folder without a tokenizer: that is the error, said before any
# model is made (no new-head warning first).
mkdir -p "$dir/notok"
cp "$dir/trained/config.json" "$dir/trained/model.safetensors" "$dir/notok/"
"$qa" --model_name_or_path "$dir/notok" --dataset_name squad --dataset_dir "$dir/squad" \
    --do_train --max_steps 1 --output_dir "$dir/notok-out" > "$dir/notok.txt" 2>&1
rc=$?
check "a model folder without a tokenizer fails naming it, before any head warning" eval \
    '[ "$rc" -ne 0 ] && contains "$dir/notok.txt" "$dir/notok: the folder has no vocab.txt" &&
     ! grep -q "newly initialised" "$dir/notok.txt"'
check "  ... vocab.txt as given" cmp -s "$dir/tok/vocab.txt" "$dir/trained/vocab.txt"
check "  ... tokenizer_config.json keeps the settings" "$PYTHON" -c '
import json, sys
c = json.load(open(sys.argv[1]))
t = json.load(open(sys.argv[2]))
ok = c["do_lower_case"] is True and c["model_max_length"] == 64
ok = ok and c["tokenizer_class"] == "BertTokenizer" and t["model"]["vocab"]["paris"] == 12
sys.exit(0 if ok else print(c) or 1)' "$dir/trained/tokenizer_config.json" \
    "$dir/trained/tokenizer.json"
check "  ... ran 2 steps" "$PYTHON" -c '
import json, sys
s = json.load(open(sys.argv[1]))
sys.exit(0 if s["global_step"] == 2 else 1)' "$dir/trained/trainer_state.json"
# report_to defaults to all: TensorBoard event files (tests/python/test_tensorboard.py
# reads them byte by byte).
check "  ... and a TensorBoard event file in output_dir/runs/<time>_<host>" \
    sh -c "grep -q train/train_loss '$dir'/trained/runs/*_$(hostname)/events.out.tfevents.*"
"$qa" --report_to wandb --output_dir "$dir/x" > "$dir/wandb.txt" 2>&1
rc=$?
check "--report_to wandb exits 2" [ "$rc" -eq 2 ]
check "  ... saying why" contains "$dir/wandb.txt" \
    "argument --report_to: 'wandb' is not available here: only tensorboard"

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

# ---- do_predict, all_results.json, the model card, torch_dtype (issue 12) ------------
# A test set without answers (run_qa.py's test split of an unlabelled set).
cat > "$dir/data/test_noans.json" <<'JSON'
{"version": "1.1", "data": [{"title": "x", "paragraphs": [
 {"context": "bo did live in lima . ana did go to paris .", "qas": [
  {"id": "x1", "question": "where did bo live", "answers": []},
  {"id": "x2", "question": "where did ana go", "answers": []},
  {"id": "x3", "question": "what city did bo live in", "answers": []}]}
]}]}
JSON
# shellcheck disable=SC2086
"$qa" --train_file "$dir/squad/train.json" --config_name "$dir/data/config.json" \
    --tokenizer_name "$dir/tok" --do_train --max_steps 2 --bf16 --do_eval \
    --validation_file "$dir/squad/validation.json" --do_predict \
    --test_file "$dir/squad/validation.json" $common --output_dir "$dir/pred" \
    > "$dir/pred.txt" 2>&1
rc=$?
check "--do_train --do_eval --do_predict --test_file" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || sed 's/^/  | /' "$dir/pred.txt"
check "  ... writes predict_predictions.json for every test question" "$PYTHON" -c '
import json, sys
p = json.load(open(sys.argv[1] + "/predict_predictions.json"))
n = json.load(open(sys.argv[1] + "/predict_nbest_predictions.json"))
ok = sorted(p) == ["v1", "v2"] and sorted(n) == ["v1", "v2"]
ok = ok and all(isinstance(v, str) for v in p.values())
ok = ok and all(p[k] == n[k][0]["text"] for k in p)  # the prediction is the best of the n-best
sys.exit(0 if ok else print(p, n) or 1)' "$dir/pred"
check "  ... but no predict_null_odds.json (v1)" [ ! -e "$dir/pred/predict_null_odds.json" ]
check "  ... and predict_results.json with the squad metric, as run_qa.py names it" "$PYTHON" -c '
import json, sys
m = json.load(open(sys.argv[1]))
ok = sorted(m) == ["predict_samples", "test_exact_match", "test_f1"]
ok = ok and m["predict_samples"] == 2 and isinstance(m["predict_samples"], int)
ok = ok and 0 <= m["test_f1"] <= 100
sys.exit(0 if ok else print(m) or 1)' "$dir/pred/predict_results.json"
check "  ... the same predictions and metrics as evaluating on that file" "$PYTHON" -c '
import json, sys
d = sys.argv[1]
e = json.load(open(d + "/eval_results.json")); p = json.load(open(d + "/predict_results.json"))
same = json.load(open(d + "/eval_predictions.json")) == json.load(open(d + "/predict_predictions.json"))
sys.exit(0 if same and e["eval_f1"] == p["test_f1"] else 1)' "$dir/pred"
check "  ... all_results.json: the train, eval and predict results together" "$PYTHON" -c '
import json, sys
d = sys.argv[1]
a = json.load(open(d + "/all_results.json"))
parts = {}
for split in ("train", "eval", "predict"):
    parts.update(json.load(open(d + "/%s_results.json" % split)))
ok = a == parts and "train_loss" in a and "eval_f1" in a and "test_f1" in a
sys.exit(0 if ok else print(sorted(a), sorted(parts)) or 1)' "$dir/pred"
check "  ... config.json says float32, the dtype of model.safetensors, after --bf16" "$PYTHON" -c '
import json, struct, sys
d = sys.argv[1]
c = json.load(open(d + "/config.json"))
with open(d + "/model.safetensors", "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    h = json.loads(f.read(n))
dtypes = {v["dtype"] for k, v in h.items() if k != "__metadata__"}
sys.exit(0 if c["torch_dtype"] == "float32" and dtypes == {"F32"} else print(c, dtypes) or 1)' \
    "$dir/pred"
check "  ... a model card README.md, saying how it was trained" contains "$dir/pred/README.md" \
    "Trained on the CPU with libcputrain"
check "  ... with the hyperparameters" contains "$dir/pred/README.md" "- train_batch_size: 2"
check "  ... and the evaluation results" contains "$dir/pred/README.md" "- F1: "
check "  ... trainer_state.json's step fields are integers" "$PYTHON" -c '
import json, sys
s = json.load(open(sys.argv[1]))
bad = [k for k in ("logging_steps", "eval_steps", "save_steps", "global_step", "max_steps",
                   "train_batch_size", "num_train_epochs") if type(s[k]) is not int]
sys.exit(0 if not bad else print(bad, s) or 1)' "$dir/pred/trainer_state.json"

# The saved model predicts alone, on a test set without answers, limited
# by --max_predict_samples: predictions, no metrics.
# shellcheck disable=SC2086
"$qa" --model_name_or_path "$dir/pred" --do_predict --test_file "$dir/data/test_noans.json" \
    --max_predict_samples 2 $common --output_dir "$dir/pred2" > "$dir/pred2.txt" 2>&1
rc=$?
check "--do_predict alone on a test set without answers" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || sed 's/^/  | /' "$dir/pred2.txt"
check "  ... predicts the first --max_predict_samples 2 questions" "$PYTHON" -c '
import json, sys
p = json.load(open(sys.argv[1]))
sys.exit(0 if sorted(p) == ["x1", "x2"] else print(p) or 1)' "$dir/pred2/predict_predictions.json"
check "  ... says there are no metrics" contains "$dir/pred2.txt" "no reference answers, so no metrics"
check "  ... and writes no predict_results.json" [ ! -e "$dir/pred2/predict_results.json" ]
check "  ... nor a model card (nothing was trained)" [ ! -e "$dir/pred2/README.md" ]

# --dataset_name: the folder's test split, and a clear refusal without one.
# shellcheck disable=SC2086
"$qa" --model_name_or_path "$dir/pred" --dataset_name squad --dataset_dir "$dir/squad" \
    --do_predict $common --output_dir "$dir/pred3" > "$dir/pred3.txt" 2>&1
rc=$?
check "--dataset_name without a test split and --do_predict fails" [ "$rc" -ne 0 ]
check "  ... as run_qa.py does" contains "$dir/pred3.txt" "--do_predict requires a test dataset"
check "  ... naming the files looked for" contains "$dir/pred3.txt" "test.json, test.jsonl"
mkdir -p "$dir/squad_test"
cp "$dir/data/validation_v2.json" "$dir/squad_test/test.json"
# shellcheck disable=SC2086
"$qa" --model_name_or_path "$dir/pred" --dataset_name squad_v2 --dataset_dir "$dir/squad_test" \
    --do_predict $common --output_dir "$dir/pred4" > "$dir/pred4.txt" 2>&1
rc=$?
check "--dataset_name squad_v2 with test.json predicts" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || sed 's/^/  | /' "$dir/pred4.txt"
check "  ... writing predict_null_odds.json for both questions" "$PYTHON" -c '
import json, sys
p = json.load(open(sys.argv[1]))
sys.exit(0 if sorted(p) == ["w1", "w2"] else print(p) or 1)' "$dir/pred4/predict_null_odds.json"
check "  ... and the squad_v2 metrics prefixed test_" "$PYTHON" -c '
import json, sys
m = json.load(open(sys.argv[1]))
ok = m["test_total"] == 2 and "test_HasAns_exact" in m and m["predict_samples"] == 2
sys.exit(0 if ok else print(m) or 1)' "$dir/pred4/predict_results.json"
check "  ... all_results.json holds them" "$PYTHON" -c '
import json, sys
d = sys.argv[1]
sys.exit(0 if json.load(open(d + "/all_results.json")) == json.load(open(d + "/predict_results.json")) else 1)' \
    "$dir/pred4"
"$qa" --do_predict --model_name_or_path "$dir/pred" --output_dir "$dir/pred5" \
    > "$dir/pred5.txt" 2>&1
rc=$?
check "--do_predict without --test_file exits 2" [ "$rc" -eq 2 ]
check "  ... saying what it needs" contains "$dir/pred5.txt" \
    "--do_predict requires a test dataset: --test_file or --dataset_name with a test split"

# load_best_model_at_end through cputrain-qa: a metric the evaluation does
# not report is refused before anything is read; the best checkpoint is
# the final model and survives save_total_limit 1.
# shellcheck disable=SC2086
"$qa" --train_file "$dir/squad/train.json" --config_name "$dir/data/config.json" \
    --tokenizer_name "$dir/tok" --do_train --do_eval --validation_file "$dir/squad/validation.json" \
    --eval_strategy steps --load_best_model_at_end $common --save_strategy steps \
    --output_dir "$dir/best0" \
    > "$dir/best0.txt" 2>&1
rc=$?
check "--load_best_model_at_end with the default metric (loss) exits 2" [ "$rc" -eq 2 ]
check "  ... naming the metrics there are" contains "$dir/best0.txt" \
    "the evaluation reports eval_exact_match, eval_f1 (no loss, as in run_qa.py)"
check "  ... before writing anything" [ ! -e "$dir/best0" ]
# shellcheck disable=SC2086
"$qa" --train_file "$dir/squad/train.json" --config_name "$dir/data/config.json" \
    --tokenizer_name "$dir/tok" --do_train --do_eval --validation_file "$dir/squad/validation.json" \
    --max_steps 3 --learning_rate 1e-2 $common --save_strategy steps --save_steps 1 \
    --eval_strategy steps --eval_steps 1 --load_best_model_at_end --metric_for_best_model f1 \
    --greater_is_better false --save_total_limit 1 --output_dir "$dir/best" > "$dir/best.txt" 2>&1
rc=$?
check "--load_best_model_at_end --metric_for_best_model f1 --save_total_limit 1" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || sed 's/^/  | /' "$dir/best.txt"
check "  ... the final model is the best checkpoint's, the only one left" "$PYTHON" -c '
import json, os, sys
d = sys.argv[1]
s = json.load(open(d + "/trainer_state.json"))
best = s["best_model_checkpoint"]
f1 = {e["step"]: e["eval_f1"] for e in s["log_history"] if "eval_f1" in e}
ok = best == d + "/checkpoint-%d" % s["best_global_step"] and s["best_metric"] == min(f1.values())
ok = ok and f1[s["best_global_step"]] == s["best_metric"]
ok = ok and sorted(n for n in os.listdir(d) if n.startswith("checkpoint-")) == [os.path.basename(best)]
ok = ok and open(best + "/model.safetensors", "rb").read() == open(d + "/model.safetensors", "rb").read()
sys.exit(0 if ok else print(best, f1, s["best_metric"], os.listdir(d)) or 1)' "$dir/best"
check "  ... saying it loaded it" contains "$dir/best.txt" "loading best model from $dir/best/checkpoint-"

# ---- hardening (issue 10) ---------------------------------------------------------
train_args="--train_file $dir/squad/train.json --config_name $dir/data/config.json \
--tokenizer_name $dir/tok --do_train"

# Integers are range-checked against their destination, never cut.
# shellcheck disable=SC2086
"$qa" $train_args $common --max_seq_length 4294967328 --output_dir "$dir/range" \
    > "$dir/range.txt" 2>&1
rc=$?
check "--max_seq_length 4294967328 exits 2" [ "$rc" -eq 2 ]
check "  ... saying it is out of range" contains "$dir/range.txt" \
    "argument --max_seq_length: 4294967328 is out of range [0, 2147483647]"
"$qa" $train_args --per_device_train_batch_size 4294967298 --output_dir "$dir/range" \
    > "$dir/range2.txt" 2>&1
rc=$?
check "--per_device_train_batch_size 4294967298 is refused" [ "$rc" -eq 2 ]
check "  ... naming the field" contains "$dir/range2.txt" "per_device_train_batch_size: 4294967298 is out of range"

# A non-UTF-8 (Latin-1) output_dir is refused before anything is written.
latin1="$dir/caf$(printf '\351')"
# shellcheck disable=SC2086
"$qa" $train_args $common --max_steps 1 --output_dir "$latin1" > "$dir/latin1.txt" 2>&1
rc=$?
check "a Latin-1 --output_dir exits 2" [ "$rc" -eq 2 ]
check "  ... naming the field and the byte" contains "$dir/latin1.txt" \
    "argument --output_dir: not valid UTF-8 at byte"
check "  ... writing nothing" [ ! -e "$latin1" ]

# A FIFO as an input fails at once, named (the timeout catches a hang).
mkfifo "$dir/fifo.json"
# shellcheck disable=SC2086
timeout 60 "$qa" --train_file "$dir/fifo.json" --config_name "$dir/data/config.json" \
    --tokenizer_name "$dir/tok" --do_train $common --max_steps 1 --output_dir "$dir/fifo-out" \
    > "$dir/fifo.txt" 2>&1
rc=$?
check "a FIFO as --train_file fails without hanging" [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]
check "  ... naming it" contains "$dir/fifo.txt" "fifo.json: is a FIFO, not a regular file"
# shellcheck disable=SC2086
timeout 60 "$qa" --train_file "$dir/squad/train.json" --config_name "$dir/data/config.json" \
    --tokenizer_name "$dir/fifo.json" --do_train $common --max_steps 1 \
    --output_dir "$dir/fifo-out" > "$dir/fifo2.txt" 2>&1
rc=$?
check "a FIFO as --tokenizer_name fails without hanging" [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]
check "  ... naming it" contains "$dir/fifo2.txt" "is a FIFO"

# A run that cannot learn (every step skipped) exits non-zero.
# shellcheck disable=SC2086
"$qa" $train_args $common --max_steps 4 --learning_rate 1e308 --output_dir "$dir/nan" \
    > "$dir/nan.txt" 2>&1
rc=$?
check "--learning_rate 1e308 exits non-zero" [ "$rc" -ne 0 ]
check "  ... with CT_ERR_NUMERIC naming the first bad step" contains "$dir/nan.txt" \
    "CT_ERR_NUMERIC: training did not learn"
check "  ... and no final model" [ ! -e "$dir/nan/model.safetensors" ]

# run_qa.py's rule for an output_dir that holds files.
mkdir -p "$dir/used"
echo notes > "$dir/used/notes.txt"
# shellcheck disable=SC2086
"$qa" $train_args $common --max_steps 1 --output_dir "$dir/used" > "$dir/used.txt" 2>&1
rc=$?
check "a non-empty --output_dir without checkpoints exits 2" [ "$rc" -eq 2 ]
check "  ... pointing at --overwrite_output_dir" contains "$dir/used.txt" \
    "already exists and is not empty (it holds notes.txt). Use --overwrite_output_dir"
# shellcheck disable=SC2086
"$qa" $train_args $common --max_steps 2 --save_strategy steps --save_steps 1 \
    --overwrite_output_dir --output_dir "$dir/used" > "$dir/used2.txt" 2>&1
rc=$?
check "  ... --overwrite_output_dir trains there" [ "$rc" -eq 0 ]
# shellcheck disable=SC2086
"$qa" $train_args $common --max_steps 3 --save_strategy steps --save_steps 1 \
    --output_dir "$dir/used" > "$dir/used3.txt" 2>&1
rc=$?
check "with checkpoints, a new run resumes from the last" [ "$rc" -eq 0 ]
check "  ... saying so" contains "$dir/used3.txt" "resuming training at $dir/used/checkpoint-2"
check "  ... and ends at step 3" "$PYTHON" -c '
import json, sys
sys.exit(0 if json.load(open(sys.argv[1]))["global_step"] == 3 else 1)' "$dir/used/trainer_state.json"
# shellcheck disable=SC2086
"$qa" $train_args $common --max_steps 1 --save_strategy steps --save_steps 1 \
    --overwrite_output_dir --output_dir "$dir/used" > "$dir/used4.txt" 2>&1
rc=$?
check "--overwrite_output_dir starts over" [ "$rc" -eq 0 ]
check "  ... deleting the old checkpoints" [ -d "$dir/used/checkpoint-1" ] && \
    [ ! -e "$dir/used/checkpoint-2" ] && [ ! -e "$dir/used/checkpoint-3" ]

# Two runs on one output_dir: the second is refused naming the first's pid,
# the first's checkpoint in progress survives; so is a run that only
# evaluates or predicts, before it writes a file. (The first reports to
# none, so that nothing but the lock can refuse the second.)
# shellcheck disable=SC2086
CPUTRAIN_TEST_CHECKPOINT_PAUSE_MS=1000 "$qa" $train_args $common --max_steps 2 \
    --save_strategy steps --save_steps 1 --report_to none --output_dir "$dir/shared" \
    > "$dir/first.txt" 2>&1 &
first=$!
n=0
until ls -d "$dir"/shared/tmp-checkpoint-* > /dev/null 2>&1 || [ "$n" -ge 600 ]; do
    sleep 0.05
    n=$((n + 1))
done
# shellcheck disable=SC2086
"$qa" $train_args $common --max_steps 2 --output_dir "$dir/shared" > "$dir/second.txt" 2>&1
rc=$?
check "a second run on a busy output_dir fails" [ "$rc" -ne 0 ]
check "  ... with CT_ERR_BUSY naming the first's pid" contains "$dir/second.txt" \
    "CT_ERR_BUSY: output_dir $dir/shared is in use by another run (pid $first"
check "  ... leaving the first's checkpoint in progress alone" \
    sh -c "ls -d '$dir'/shared/tmp-checkpoint-* > /dev/null 2>&1"
# shellcheck disable=SC2086
"$qa" --model_name_or_path "$dir/trained" --tokenizer_name "$dir/tok" --do_eval \
    --validation_file "$dir/squad/validation.json" $common --overwrite_output_dir \
    --output_dir "$dir/shared" > "$dir/second_eval.txt" 2>&1
rc=$?
check "an evaluation alone on a busy output_dir fails" [ "$rc" -ne 0 ]
check "  ... with CT_ERR_BUSY naming the first's pid" contains "$dir/second_eval.txt" \
    "CT_ERR_BUSY: output_dir $dir/shared is in use by another run (pid $first"
check "  ... writing no results there" [ ! -e "$dir/shared/eval_results.json" ] && \
    [ ! -e "$dir/shared/eval_predictions.json" ]
# shellcheck disable=SC2086
"$qa" --model_name_or_path "$dir/trained" --tokenizer_name "$dir/tok" --do_predict \
    --test_file "$dir/squad/validation.json" $common --output_dir "$dir/shared" \
    > "$dir/second_predict.txt" 2>&1
rc=$?
check "a prediction alone on a busy output_dir fails" [ "$rc" -ne 0 ]
check "  ... with CT_ERR_BUSY naming the first's pid" contains "$dir/second_predict.txt" \
    "CT_ERR_BUSY: output_dir $dir/shared is in use by another run (pid $first"
check "  ... writing no predictions there" [ ! -e "$dir/shared/predict_predictions.json" ]
kill -9 "$first" 2> /dev/null
wait "$first" 2> /dev/null
# shellcheck disable=SC2086
"$qa" $train_args $common --max_steps 2 --overwrite_output_dir --output_dir "$dir/shared" \
    > "$dir/third.txt" 2>&1
rc=$?
check "after SIGKILL of the holder the folder is free again" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || sed 's/^/  | /' "$dir/third.txt"

# Every argument's fate, Hub ids, max_seq_length, logs (issue 12).
# shellcheck source=tests/qa_cli/fates.sh
. "$(dirname "$0")/fates.sh"

# Early exits free what they made (LeakSanitizer found the args leaked).
if command -v valgrind > /dev/null 2>&1; then
    for case in "--help" "--no_such_argument 3 --output_dir $dir/x" \
        "--max_seq_length 4294967328 --output_dir $dir/x" \
        "--dataset_name squad --dataset_dir $dir/empty --do_train --output_dir $dir/x" \
        "--do_train --output_dir $dir/x" "--output_dir $latin1" \
        "--do_predict --model_name_or_path $dir/pred --output_dir $dir/x" \
        "--do_predict --dataset_name squad --dataset_dir $dir/squad --output_dir $dir/x"; do
        # shellcheck disable=SC2086
        valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
            --error-exitcode=99 "$qa" $case > "$dir/leak.txt" 2>&1
        rc=$?
        check "no leak on the early exit of: $case" [ "$rc" -ne 99 ]
        [ "$rc" -ne 99 ] || sed 's/^/  | /' "$dir/leak.txt"
    done
else
    echo "qa_cli: SKIPPED the leak checks of early exits: no valgrind on this machine"
fi

echo "qa_cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
