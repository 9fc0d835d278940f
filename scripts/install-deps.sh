#!/bin/sh
# Installs the Debian 12 packages libcputrain builds and tests with; does
# nothing when every one is already present. Run as root (or through sudo).
set -eu

# libudev-dev: `pkg-config --static hwloc` names -ludev. locales: the source
# of the de_DE locale the JSON tests build to prove number parsing ignores
# LC_NUMERIC. clang and libclang-rt-14-dev: the fuzz harnesses (tests/fuzz/);
# libclang-rt-14-dev holds libclang_rt.fuzzer and the sanitizer runtimes,
# and clang only recommends it, which --no-install-recommends skips.
# python3-venv, python3-pip, python3-setuptools, python3-wheel: `pip install
# bindings/python` into a venv, offline (tests/venv/run.sh).
# python3-protobuf: parses the TensorBoard event files a run writes
# (tests/python/test_tensorboard.py; TensorBoard itself is not in Debian).
# python3-sklearn and python3-scipy: the references of tests/python/test_metrics.py;
# python3-pandas: read_csv, the CSV reader behind `datasets` (tests/python/test_table.py).
# mpich and libmpich-dev: the MPICH-ABI mpi plugin (dist-mpich.so) and Hydra's
# mpirun.mpich, the launcher family of Intel MPI; beside Open MPI, whose
# mpirun stays the default one (update-alternatives priority).
# libzstd-dev, libsnappy-dev: Parquet pages and Arrow bodies; libcurl4-openssl-dev:
# the header of libcurl, which the library loads for Hub downloads.
packages="build-essential pkg-config libopenblas-dev libhwloc-dev hwloc
libudev-dev libnuma-dev libzstd-dev libsnappy-dev libcurl4-openssl-dev libopenmpi-dev openmpi-bin mpich libmpich-dev check abigail-tools python3
python3-venv python3-pip python3-setuptools python3-wheel python3-numpy python3-torch python3-protobuf python3-sklearn python3-scipy python3-pandas locales clang libclang-rt-14-dev"

missing=""
for p in $packages; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
        missing="$missing $p"
    fi
done

# node and npm run the tokenizer's reference (tests/tokenizer/run.sh). They
# are checked as commands: a node installed otherwise brings its own npm,
# and Debian's npm package would conflict with it.
if ! command -v node > /dev/null 2>&1 || ! command -v npm > /dev/null 2>&1; then
    missing="$missing nodejs npm"
fi

if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
    exit 0
fi

echo "install-deps: installing$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
