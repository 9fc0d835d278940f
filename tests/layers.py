"""layers.py LIB_DIR: the include graph of lib/ against the one-way stack
the docs draw (docs/internals.md). Every `#include "folder/file.h"` of a file in lib/ must
point at its own layer or one below; no two files may include each other
(x.c including y.h while y.c includes x.h, the headers being each file's
own: x.c calls into y.c and y.c into x.c), and no two folders of one
layer each other's headers. Prints each
offending edge and "layers: N edges, M upward, K mutual"; exit status 1
when any."""
import os
import re
import sys

# From the machine up. Folders of one layer may include each other's
# headers, never a layer above their own.
LAYERS = [
    ["core"],
    ["machine"],
    ["kernels"],
    ["model", "optim", "data", "dist", "args", "hub"],
    ["train"],
    ["workflow"],
]
LEVEL = {folder: i for i, names in enumerate(LAYERS) for folder in names}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main():
    lib = sys.argv[1]
    edges, upward, mutual = 0, [], []
    includes = {}  # "folder/stem" of a .c -> the "folder/stem" of each header it includes
    folders = {}   # folder -> set of other folders it includes
    for folder in sorted(os.listdir(lib)):
        base = os.path.join(lib, folder)
        if not os.path.isdir(base):
            continue
        if folder not in LEVEL:
            upward.append("%s/: a folder of no layer (add it to tests/layers.py)" % folder)
            continue
        for root, _, files in os.walk(base):
            for name in sorted(files):
                if not name.endswith((".c", ".h")):
                    continue
                path = os.path.join(root, name)
                rel = os.path.relpath(path, lib)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                for target in INCLUDE.findall(text):
                    if "/" not in target:
                        continue  # a file beside it (tools' own headers)
                    edges += 1
                    to = target.split("/")[0]
                    if to not in LEVEL:
                        continue  # a header of the same folder by a subfolder path
                    if LEVEL[to] > LEVEL[folder]:
                        upward.append("%s includes %s: %s is above %s" % (rel, target, to, folder))
                    if to != folder:
                        folders.setdefault(folder, set()).add(to)
                    if name.endswith(".c"):
                        stem = os.path.splitext(rel)[0]
                        includes.setdefault(stem, set()).add(os.path.splitext(target)[0])
    for a, targets in includes.items():
        for b in targets:
            if b != a and a in includes.get(b, ()) and a < b:
                mutual.append("%s and %s include each other" % (a, b))
    for a, targets in folders.items():
        for b in targets:
            if a < b and a in folders.get(b, ()):
                mutual.append("folders %s/ and %s/ include each other" % (a, b))
    for line in upward + mutual:
        print("layers: " + line)
    print("layers: %d edges, %d upward, %d mutual" % (edges, len(upward), len(mutual)))
    return 1 if upward or mutual else 0


if __name__ == "__main__":
    sys.exit(main())
