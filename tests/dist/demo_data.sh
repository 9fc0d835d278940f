# Sourced by the tests of tests/dist: demo_data DIR writes the demo's
# generated SQuAD set and its model's config.json (dropout on) into DIR
# (data/demo/generate.py).
demo_data() {
    "$PYTHON" data/demo/generate.py "$1" > /dev/null
}
