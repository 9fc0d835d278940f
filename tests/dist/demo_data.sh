# Sourced by the tests of tests/dist: demo_data DIR writes the demo's
# generated SQuAD set into DIR (data/demo/generate.py) and, beside its
# config.json, config_no_dropout.json: without dropout, runs at different
# world sizes must end with the same model (dropout masks are per rank).
demo_data() {
    "$PYTHON" data/demo/generate.py "$1" > /dev/null || return 1
    "$PYTHON" - "$1" <<'PY'
import json, sys
config = json.load(open(sys.argv[1] + "/config.json"))
config["hidden_dropout_prob"] = config["attention_probs_dropout_prob"] = 0.0
json.dump(config, open(sys.argv[1] + "/config_no_dropout.json", "w"))
PY
}
