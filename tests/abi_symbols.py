#!/usr/bin/env python3
"""Checks that three lists of the public API agree: the CT_API functions in
the headers, the linker version script, and the symbols the built library
exports (each under a CPUTRAIN_<major>.<minor> version node), and that the
library's SONAME is libcputrain.so.<major>.

usage: abi_symbols.py LIBRARY.so INCLUDE_DIR MAP_FILE
Prints every disagreement; exits 1 if there is any."""

import glob
import os
import re
import subprocess
import sys


def strip_c_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def header_functions(include_dir):
    """Names of CT_API functions declared in include_dir/*.h."""
    names = set()
    for path in sorted(glob.glob(os.path.join(include_dir, "*.h"))):
        with open(path) as f:
            text = strip_c_comments(f.read())
        # Preprocessor lines hold the CT_API definition itself, not declarations.
        text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)
        names.update(re.findall(r"\bCT_API\b[^;{]*?\b(ct_\w+)\s*\(", text))
    return names


def header_major(include_dir):
    with open(os.path.join(include_dir, "core.h")) as f:
        m = re.search(r"#define\s+CT_VERSION_MAJOR\s+(\d+)", f.read())
    return int(m.group(1)) if m else None


def map_nodes(map_path, problems):
    """{node name: [global symbols]} from a GNU ld version script."""
    with open(map_path) as f:
        text = strip_c_comments(f.read())
    text = re.sub(r"#[^\n]*", " ", text)
    nodes = {}
    for m in re.finditer(r"([\w.]+)\s*\{(.*?)\}\s*([\w.]*)\s*;", text, flags=re.S):
        name, body = m.group(1), m.group(2)
        symbols = []
        for section in re.finditer(r"(global|local)\s*:([^:]*?)(?=\b(?:global|local)\s*:|$)",
                                   body, flags=re.S):
            entries = [e.strip() for e in section.group(2).split(";") if e.strip()]
            if section.group(1) == "global":
                for e in entries:
                    if re.search(r"[*?\[]", e):
                        problems.append("map %s: wildcard '%s' in global: list every symbol"
                                        % (name, e))
                    else:
                        symbols.append(e)
            elif entries != ["*"] and entries:
                problems.append("map %s: local: should be just '*', is %s" % (name, entries))
        nodes[name] = symbols
    return nodes


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("abi_symbols: %s failed: %s" % (" ".join(cmd), result.stderr.strip()))
    return result.stdout


def exported_symbols(library):
    """[(name, version, type)] for every defined global dynamic symbol.
    readelf -W prints versioned names as name@@VERSION (the default)."""
    out = []
    for line in run(["readelf", "--dyn-syms", "-W", library]).splitlines():
        fields = line.split()
        # Num: Value Size Type Bind Vis Ndx Name
        if len(fields) < 8 or not fields[0].rstrip(":").isdigit():
            continue
        sym_type, bind, ndx, name = fields[3], fields[4], fields[6], fields[7]
        if ndx == "UND" or bind not in ("GLOBAL", "WEAK", "UNIQUE"):
            continue
        base, sep, version = name.partition("@")
        version = version.lstrip("@")
        # Each version node is itself an ABS symbol named after the node.
        if ndx == "ABS" and version in ("", base) and re.fullmatch(r"[A-Z]\w*_\d+\.\d+", base):
            continue
        out.append((base, version, sym_type))
    return out


def soname(library):
    m = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", run(["readelf", "-d", library]))
    return m.group(1) if m else None


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    library, include_dir, map_path = argv[1:]
    for path in (library, map_path):
        if not os.path.isfile(path):
            print("abi_symbols: %s does not exist (build it first)" % path)
            return 1
    problems = []

    declared = header_functions(include_dir)
    major = header_major(include_dir)
    if not declared:
        problems.append("no CT_API functions found in %s" % include_dir)
    if major is None:
        problems.append("no CT_VERSION_MAJOR in %s/core.h" % include_dir)

    # (a), (b): headers and map agree, and the map's nodes are well named.
    nodes = map_nodes(map_path, problems)
    if not nodes:
        problems.append("%s: no version node found" % map_path)
    in_map = {}
    for node, symbols in nodes.items():
        m = re.fullmatch(r"CPUTRAIN_(\d+)\.(\d+)", node)
        if not m:
            problems.append("map node %s is not named CPUTRAIN_<major>.<minor>" % node)
        elif major is not None and int(m.group(1)) != major:
            problems.append("map node %s is not of major version %d" % (node, major))
        for s in symbols:
            if s in in_map:
                problems.append("map lists %s twice (%s and %s)" % (s, in_map[s], node))
            in_map[s] = node
    for name in sorted(declared - set(in_map)):
        problems.append("%s is declared CT_API but missing from %s" % (name, map_path))
    for name in sorted(set(in_map) - declared):
        problems.append("%s is in %s but no header declares it CT_API" % (name, map_path))

    # (c): the library exports exactly the declared functions, each versioned
    # by the node the map puts it in.
    exported = exported_symbols(library)
    seen = set()
    for name, version, sym_type in sorted(exported):
        seen.add(name)
        if not name.startswith("ct_") or name.startswith("ct__"):
            problems.append("%s exports %s, which is not a public ct_ name" % (library, name))
        elif name not in declared:
            problems.append("%s exports %s, which no header declares" % (library, name))
        if not version:
            problems.append("%s exports %s without a symbol version" % (library, name))
        elif not re.fullmatch(r"CPUTRAIN_\d+\.\d+", version):
            problems.append("%s exports %s@%s, not a CPUTRAIN_<major>.<minor> version"
                            % (library, name, version))
        elif name in in_map and version != in_map[name]:
            problems.append("%s exports %s@%s, but the map puts it in %s"
                            % (library, name, version, in_map[name]))
        if name in declared and sym_type != "FUNC":
            problems.append("%s exports %s as %s, not FUNC" % (library, name, sym_type))
    for name in sorted(declared - seen):
        problems.append("%s is declared CT_API but %s does not export it" % (name, library))

    # (d): SONAME carries the major version.
    actual = soname(library)
    wanted = "libcputrain.so.%s" % major
    if actual != wanted:
        problems.append("%s has SONAME %s, expected %s" % (library, actual, wanted))

    for p in problems:
        print("abi_symbols: " + p)
    print("abi_symbols: %d functions declared, %d in the map, %d exported; %s"
          % (len(declared), len(in_map), len(exported),
             "%d problem(s)" % len(problems) if problems else "all agree"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
