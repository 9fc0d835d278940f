#!/bin/sh
# shellcheck disable=SC2086 # compiler and flag variables are split on purpose
# Proves the public headers' promises: <cputrain/cputrain.h> compiles as
# strict C99 and as C++11/17 without a warning, declares every function with
# C linkage, survives double inclusion, and every other header in
# include/cputrain refuses to be included on its own.
# Uses $CC and $CXX; run from the source tree's top (make check does).
set -u
: "${CC:=cc}" "${CXX:=c++}"

inc=include
work=$(mktemp -d "${TMPDIR:-/tmp}/cputrain-headers.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT INT TERM

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1"; [ -s "$work/out" ] && sed 's/^/     /' "$work/out"; }

# Every CT_API function name, from the headers themselves, so new functions
# are covered without editing this file.
functions=$(sed -n 's/^.*CT_API[^(]*[^a-zA-Z0-9_]\(ct_[a-zA-Z0-9_]*\) *(.*/\1/p' "$inc"/cputrain/*.h | sort -u)
if [ -z "$functions" ]; then
    echo "FAIL found no CT_API functions in $inc/cputrain"
    exit 1
fi

# A translation unit that includes the umbrella twice and takes the address
# of every function (which also proves each is declared).
{
    echo '#include <cputrain/cputrain.h>'
    echo '#include <cputrain/cputrain.h>'
    echo 'typedef void (*any_fn)(void);'
    echo 'any_fn every_function[] = {'
    for f in $functions; do echo "    (any_fn)$f,"; done
    echo '};'
    echo 'int main(void) { return ct_version_number() == CT_VERSION_NUMBER ? 0 : 1; }'
} > "$work/umbrella.c"
cp "$work/umbrella.c" "$work/umbrella.cpp"

c_flags="-pedantic -Werror -Wall -Wextra -Wstrict-prototypes -Wmissing-prototypes -Wconversion"
for std in c99 c11; do
    if $CC -std=$std $c_flags -I"$inc" -c "$work/umbrella.c" -o "$work/c.o" > "$work/out" 2>&1; then
        ok "cputrain.h as C ($CC -std=$std $c_flags)"
    else
        bad "cputrain.h as C ($CC -std=$std $c_flags)"
    fi
done

cxx_flags="-pedantic -Werror -Wall -Wextra"
for std in c++11 c++17; do
    name="cputrain.h as C++ ($CXX -std=$std $cxx_flags)"
    if ! $CXX -std=$std $cxx_flags -I"$inc" -c "$work/umbrella.cpp" -o "$work/cxx.o" > "$work/out" 2>&1; then
        bad "$name"
        continue
    fi
    ok "$name"
    # extern "C": the C++ object must reference the plain C names. A missing
    # guard shows up as mangled _Z... references instead.
    nm -u "$work/cxx.o" | awk '{print $NF}' > "$work/undefined"
    missing=""
    for f in $functions; do
        grep -qx "$f" "$work/undefined" || missing="$missing $f"
    done
    if [ -z "$missing" ] && ! grep -q '^_Z.*ct_' "$work/undefined"; then
        ok "every function has C linkage in C++ ($std)"
    else
        grep '^_Z.*ct_' "$work/undefined" | head -n 5 > "$work/out"
        bad "C linkage in C++ ($std): not referenced as C:$missing"
    fi
done

# Sub-headers: each is part of the umbrella, and including one directly
# must fail with its #error, whose text sends the reader to the umbrella.
for header in "$inc"/cputrain/*.h; do
    base=${header##*/}
    [ "$base" = cputrain.h ] && continue
    if grep -Eq "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"](cputrain/)?${base}[>\"]" "$inc/cputrain/cputrain.h"; then
        ok "<cputrain/$base> is included by cputrain.h"
    else
        : > "$work/out"
        bad "<cputrain/$base> is not included by cputrain.h"
    fi
    printf '#include <cputrain/%s>\nint main(void) { return 0; }\n' "$base" > "$work/direct.c"
    if $CC -std=c99 -I"$inc" -c "$work/direct.c" -o "$work/direct.o" > "$work/out" 2>&1; then
        : > "$work/out"
        bad "<cputrain/$base> alone compiled; it must #error and point to <cputrain/cputrain.h>"
    elif grep -q 'cputrain/cputrain\.h' "$work/out"; then
        ok "<cputrain/$base> refuses direct inclusion"
    else
        bad "<cputrain/$base> failed, but not with the #error naming <cputrain/cputrain.h>"
    fi
done

echo "test_headers: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
