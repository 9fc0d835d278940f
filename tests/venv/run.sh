#!/bin/sh
# The Python package installed with pip into a virtual environment, as a
# user whose Python is not /usr/bin/python3's layout would: a venv with
# Debian's numpy and setuptools visible (--system-site-packages), `pip
# install --no-build-isolation --no-index` (offline: nothing fetched) of a
# copy of bindings/python, then from outside the source tree: the package
# imported from the venv, its version the library's, one training step, the
# same without numpy, `python -m cputrain.run_qa --version`; then pip
# uninstall, after which the import fails. One ok/FAIL line per check.
# usage: B=build PYTHON=/usr/bin/python3 sh tests/venv/run.sh (from the top)
set -u
: "${B:=build}" "${PYTHON:=/usr/bin/python3}"
top=$(pwd)
lib="$top/$B/lib/libcputrain.so.0"
work=$(mktemp -d "${TMPDIR:-/tmp}/cputrain-venv.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "venv: ok: $1"; }
bad() { failed=$((failed + 1)); echo "venv: FAILED: $1"; [ -z "${2:-}" ] || sed 's/^/  | /' "$2"; }

if ! "$PYTHON" -c 'import ensurepip, venv' > /dev/null 2>&1; then
    echo "venv: SKIPPED: $PYTHON has no venv/ensurepip (scripts/install-deps.sh installs python3-venv)"
    exit 77
fi
if "$PYTHON" -m venv --system-site-packages "$work/venv" > "$work/log" 2>&1; then
    ok "python3 -m venv --system-site-packages"
else
    bad "python3 -m venv" "$work/log"
    exit 1
fi
py="$work/venv/bin/python"
# A copy: pip builds in the source folder and would leave build/ there.
cp -r bindings/python "$work/src"
if "$py" -m pip install --no-build-isolation --no-index --no-deps --quiet "$work/src" \
    > "$work/log" 2>&1; then
    ok "pip install --no-build-isolation --no-index bindings/python (offline)"
else
    bad "pip install" "$work/log"
fi

cd "$work"
step='
import sys, cputrain
assert cputrain.__file__.startswith(sys.prefix), cputrain.__file__
model = cputrain.Model.create("bert-test", task="question-answering", seed=1)
loss = model.forward_backward([[2] + [7] * 15] * 2, start_positions=[3, 4], end_positions=[5, 6])
assert loss > 0, loss
print(cputrain.__version__)
'
if version=$(CPUTRAIN_LIBRARY="$lib" "$py" -c "$step" 2> "$work/log"); then
    ok "imported from the venv, one training step (version $version)"
else
    bad "import and a training step from the venv" "$work/log"
fi
want=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$top/bindings/python/pyproject.toml")
[ "${version:-}" = "$want" ] && ok "pyproject.toml's version $want is the library's" ||
    bad "pyproject.toml's version $want, the library's ${version:-?}"
if CPUTRAIN_LIBRARY="$lib" "$py" -c "import sys; sys.modules['numpy'] = None
$step" > /dev/null 2> "$work/log"; then
    ok "the same without numpy"
else
    bad "without numpy" "$work/log"
fi
if CPUTRAIN_LIBRARY="$lib" "$py" -m cputrain.run_qa --version > "$work/log" 2>&1 &&
    grep -q "libcputrain $want" "$work/log"; then
    ok "python -m cputrain.run_qa --version"
else
    bad "run_qa --version" "$work/log"
fi
gone='import sys, importlib.util as u
spec = u.find_spec("cputrain")
sys.exit(0 if spec is None or not spec.origin.startswith(sys.prefix) else 1)'
if "$py" -m pip uninstall --yes --quiet cputrain > "$work/log" 2>&1 && "$py" -c "$gone"; then
    ok "pip uninstall: the package is gone from the venv"
else
    bad "pip uninstall" "$work/log"
fi
echo "venv: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
