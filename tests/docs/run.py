#!/usr/bin/python3
"""The documentation's runnable commands, run as a user would type them:
every ```sh block of README.md, docs/*.md and deploy/README.md that follows
a `<!-- runnable -->` line runs with `sh -e` from the top of the tree, with
the build's tools first on PATH, Python's package importable, and Hub ids
answered by the stand-in Hub on 127.0.0.1 (tests/python/hub_server.py: a
small google-bert/bert-base-uncased and -large-uncased, squad as
rajpurkar/squad's Parquet files; tests/hub/fixtures.py); Intel MPI's
`mpirun` line runs under Debian's MPICH (mpirun.mpich). A `# text` line
after a command is output the block must print. The blocks not marked
(other machines, Kubernetes, the test command itself) are run by the tests
their text names. usage: run.py BUILD_DIR; one line per block; exit status
1 when any failed, 77 when node/npm (DuckDB's) or mpirun.mpich is missing."""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "tests", "hub"), os.path.join(ROOT, "tests", "python"),
                os.path.join(ROOT, "bindings", "python")]
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
os.environ.setdefault("CPUTRAIN_LIBRARY", os.path.join(BUILD, "lib", "libcputrain.so.0"))

import fixtures  # noqa: E402
from hub_server import HubServer, Repo  # noqa: E402

MARK = "<!-- runnable -->"
GUIDE_OUTPUT = "/tmp/debug_squad"  # the guide's own --output_dir, written as-is


def runnable_blocks():
    """(file:line, text) of every marked block, in file order."""
    files = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))) \
        + [os.path.join(ROOT, "deploy", "README.md")]
    blocks = []
    for path in files:
        with open(path) as f:
            lines = f.read().split("\n")
        for i, line in enumerate(lines):
            if line.strip() != MARK:
                continue
            if i + 1 >= len(lines) or not lines[i + 1].startswith("```sh"):
                blocks.append(("%s:%d" % (os.path.relpath(path, ROOT), i + 1), None))
                continue
            end = lines.index("```", i + 2)
            blocks.append(("%s:%d" % (os.path.relpath(path, ROOT), i + 2),
                           "\n".join(lines[i + 2:end])))
    return blocks


def expected_output(block):
    """The `# text` lines that follow a command: what it must print."""
    return [line[2:] for line in block.split("\n") if line.startswith("# ")]


def main():
    for tool in ("node", "npm", "mpirun.mpich"):
        if not shutil.which(tool):
            print("docs: SKIPPED: %s not found (scripts/install-deps.sh installs it)" % tool)
            return 77
    work = tempfile.mkdtemp(prefix="cputrain-docs-")
    try:
        data, model = fixtures.make_model_repo(work, ROOT)
        server = HubServer()
        for name in ("google-bert/bert-base-uncased", "google-bert/bert-large-uncased"):
            server.add(Repo(name, model))
        server.add(Repo("rajpurkar/squad", fixtures.squad_repo(work, BUILD, data),
                        repo_type="dataset"))
        server.renamed[("dataset", "squad")] = "rajpurkar/squad"
        shims = os.path.join(work, "bin")
        os.makedirs(shims)
        with open(os.path.join(shims, "mpirun"), "w") as f:
            f.write('#!/bin/sh\nexec mpirun.mpich "$@"\n')
        os.chmod(os.path.join(shims, "mpirun"), 0o755)
        env = dict(os.environ, HF_ENDPOINT=server.endpoint, HF_HUB_OFFLINE="0", HF_TOKEN="",
                   HF_HUB_CACHE=os.path.join(work, "hub"),
                   HF_DATASETS_CACHE=os.path.join(work, "datasets"),
                   PATH=os.pathsep.join([shims, os.path.join(BUILD, "bin"), os.environ["PATH"]]),
                   PYTHONPATH=os.path.join(ROOT, "bindings", "python"))
        blocks = runnable_blocks()
        failed = 0
        for where, block in blocks:
            if block is None:
                print("docs: FAILED: %s: %s is not followed by a ```sh block" % (where, MARK))
                failed += 1
                continue
            shutil.rmtree(GUIDE_OUTPUT, ignore_errors=True)
            p = subprocess.run(["sh", "-e", "-c", block], cwd=ROOT, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
            missing = [e for e in expected_output(block) if e not in p.stdout]
            first = re.sub(r"\s+", " ", block.split("\n")[0])[:70]
            if p.returncode == 0 and not missing:
                print("docs: ok: %s: %s" % (where, first))
            else:
                failed += 1
                print("docs: FAILED: %s: %s (exit %d%s)" % (where, first, p.returncode,
                                                          ", missing %r" % missing if missing else ""))
                print("\n".join("  | " + line for line in p.stdout.splitlines()[-20:]))
        shutil.rmtree(GUIDE_OUTPUT, ignore_errors=True)
        server.close()
        if len(blocks) < 3:
            print("docs: FAILED: only %d runnable blocks found (the README marks 3)" % len(blocks))
            failed += 1
        print("docs: %d blocks, %d failed" % (len(blocks), failed))
        return 1 if failed else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
