#!/bin/sh
# Compares the built library's ABI with the recorded baseline (libabigail's
# abidiff) and fails on anything that could break a program built against
# the baseline. Added functions are compatible: reported, not failed.
#
# usage: abi_check.sh BASELINE.abi LIBRARY.so
#
# Why the summary is read and not only abidiff's exit code: abidiff sets the
# "incompatible" bit (8) only for removed symbols. A function whose
# parameter type changed (int -> int64_t) sets just the "ABI change" bit (4),
# the same bit as an added function, yet breaks every caller. So with bit 4
# the summary decides: any removed or changed function or variable fails.
# Growing an enum is fine, including the one-past-the-last sentinels
# (CT_STATUS_END_) whose value must move when a status is added: they are
# suppressed below.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 BASELINE.abi LIBRARY.so" >&2
    exit 2
fi
baseline=$1
library=$2
headers=$(dirname "$0")/../include/cputrain

if [ ! -f "$baseline" ]; then
    echo "abi-check: no baseline at $baseline; record the current ABI with 'make abi-baseline' and commit it"
    exit 1
fi
if [ ! -f "$library" ]; then
    echo "abi-check: $library does not exist; build it first"
    exit 1
fi
if ! command -v abidiff > /dev/null 2>&1; then
    echo "abi-check: abidiff not found (Debian package abigail-tools; scripts/install-deps.sh installs it)"
    exit 1
fi
if ! readelf -S "$library" | grep -q '\.debug_info'; then
    echo "abi-check: $library has no debug info; abidiff needs it to see types (build with -g)"
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/cputrain-abi.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT INT TERM

# Sentinels are named *_END_ by house style; found in the headers so a new
# enum with one is covered without editing this file.
sentinels=$(grep -ho '\bCT_[A-Z0-9_]*_END_\b' "$headers"/*.h | sort -u | paste -sd, -)
# Every handle is opaque (the public headers define no struct), so a struct
# defined elsewhere (lib/model/model.h's ct_model) can change freely: callers
# never see its size or members.
printf '[suppress_type]\n  type_kind = struct\n  source_location_not_regexp = ^include/cputrain/\n' \
    > "$work/suppressions"
if [ -n "$sentinels" ]; then
    printf '[suppress_type]\n  type_kind = enum\n  changed_enumerators = %s\n' "$sentinels" \
        >> "$work/suppressions"
fi

abidiff --suppressions "$work/suppressions" --headers-dir2 "$headers" \
    "$baseline" "$library" > "$work/report" 2>&1
rc=$?
cat "$work/report"

if [ $((rc & 3)) -ne 0 ]; then
    echo "abi-check: FAILED: abidiff could not compare (exit $rc: error or usage)"
    exit 1
fi
if [ $((rc & 8)) -ne 0 ]; then
    echo "abi-check: FAILED: incompatible change (a symbol was removed or its size changed)"
    exit 1
fi
if [ $((rc & 4)) -eq 0 ]; then
    echo "abi-check: ok, no ABI change from $baseline"
    exit 0
fi

# Bit 4 alone: sum "N Removed" and "N Changed" over the summary lines, e.g.
# "Functions changes summary: 0 Removed, 1 Changed (2 filtered out), 3 Added functions".
broken=$(grep 'changes summary:' "$work/report" |
    sed -n 's/.*: \([0-9]*\) Removed, \([0-9]*\) Changed.*/\1 \2/p; s/.*: \([0-9]*\) Removed,.*Added.*/\1 0/p' |
    awk '{ n += $1 + $2 } END { print n + 0 }')
if [ "$broken" -ne 0 ]; then
    echo "abi-check: FAILED: $broken existing function(s)/variable(s) removed or changed (see above)."
    echo "abi-check: an intended, compatible change is recorded with 'make abi-baseline'."
    exit 1
fi
echo "abi-check: ok, compatible additions only (listed above); 'make abi-baseline' records them"
exit 0
