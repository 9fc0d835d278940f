#!/bin/sh
# The image's build and install steps, in one place: deploy/Dockerfile runs
# this script, and tests/deploy/run.sh runs it into a staging folder and
# uses what it installed. Builds in BUILD_DIR, then installs under PREFIX
# (DESTDIR honoured): the tools in bin/, the library and the MPI plugins in
# lib/, the headers, pkg-config files, and the Python package in
# PREFIX/python (the image's PYTHONPATH; it loads PREFIX/lib's library,
# found relative to itself, so a staged or moved prefix loads its own).
# usage: deploy/install.sh PREFIX BUILD_DIR     (from the repository root)
set -eu
prefix=${1:?usage: deploy/install.sh PREFIX BUILD_DIR}
build=${2:?usage: deploy/install.sh PREFIX BUILD_DIR}
# PREFIX on both steps: the library keeps $(LIBDIR)/cputrain as where to
# look for the MPI plugin.
make -j"$(nproc)" B="$build" PREFIX="$prefix" all
make B="$build" PREFIX="$prefix" PYTHON_SITEDIR="$prefix/python" install
