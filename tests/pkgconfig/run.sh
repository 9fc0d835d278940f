#!/bin/sh
# shellcheck disable=SC2086 # compiler and flag variables are split on purpose
# Installs the library into a temporary prefix and proves that pkg-config is
# all a program needs: the version it reports is the header's, and hello.c /
# hello.cpp build and run against the shared library with `pkg-config
# --cflags --libs cputrain`, then against the static one alone with
# `--static`, without libcputrain.so being needed at run time.
# Reads B, MAKE, CC, CXX (and PKG_CONFIG) from the environment, as
# tests/run_all.sh passes them; run from anywhere.
set -eu
: "${B:=build}" "${MAKE:=make}" "${CC:=cc}" "${CXX:=c++}" "${PKG_CONFIG:=pkg-config}"

cd "$(dirname "$0")/../.."
src=tests/pkgconfig
work=$(mktemp -d "${TMPDIR:-/tmp}/cputrain-pkgconfig.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

step=0
ok() { step=$((step + 1)); echo "ok   $1"; }
fail() {
    echo "FAIL $1"
    [ $# -lt 2 ] || sed 's/^/     /' "$2"
    echo "pkgconfig: $step passed, 1 failed"
    exit 1
}

install_into() {
    $MAKE --no-print-directory install B="$B" PREFIX="$1" > "$work/install.log" 2>&1 ||
        fail "make install B=$B PREFIX=$1" "$work/install.log"
}

# pkg-config looks in the prefix first; the system path stays for the
# libraries named in Requires.private (hwloc, numa, openblas).
pc_flags() {
    prefix=$1
    shift
    PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" $PKG_CONFIG "$@"
}

header=include/cputrain/core.h
part() { sed -n "s/^#define CT_VERSION_$1 *\([0-9]*\).*/\1/p" "$header"; }
version="$(part MAJOR).$(part MINOR).$(part PATCH)"

# ---- shared -------------------------------------------------------------
shared=$work/shared
install_into "$shared"
ok "make install into a temporary prefix"

for name in cputrain libcputrain; do
    got=$(pc_flags "$shared" --modversion "$name" 2> "$work/pc.err") || fail "pkg-config --modversion $name" "$work/pc.err"
    [ "$got" = "$version" ] || fail "pkg-config --modversion $name is '$got', the header says $version"
done
ok "pkg-config --modversion cputrain = $version, the header's version"

flags=$(pc_flags "$shared" --cflags --libs cputrain)
$CC -std=c99 -pedantic -Wall -Wextra -Werror -o "$work/hello_c" "$src/hello.c" $flags \
    > "$work/cc.log" 2>&1 || fail "build hello.c with: $flags" "$work/cc.log"
$CXX -std=c++11 -pedantic -Wall -Wextra -Werror -o "$work/hello_cxx" "$src/hello.cpp" $flags \
    > "$work/cc.log" 2>&1 || fail "build hello.cpp with: $flags" "$work/cc.log"
ok "hello.c and hello.cpp build with pkg-config --cflags --libs cputrain"

for prog in hello_c hello_cxx; do
    # The installed copy must be the one loaded, not one from the system.
    LD_LIBRARY_PATH="$shared/lib" ldd "$work/$prog" > "$work/ldd" 2>&1
    grep -q "libcputrain.so.[0-9]* => $shared/lib/" "$work/ldd" ||
        fail "$prog does not load libcputrain from $shared/lib" "$work/ldd"
    LD_LIBRARY_PATH="$shared/lib" "$work/$prog" > "$work/run.log" 2>&1 ||
        fail "$prog against the shared library" "$work/run.log"
    cat "$work/run.log"
done
ok "both run against the installed shared library"

# ---- static -------------------------------------------------------------
# A second prefix without any libcputrain.so, so only the archive can link.
static=$work/static
install_into "$static"
rm -f "$static"/lib/libcputrain.so*
flags=$(pc_flags "$static" --static --cflags --libs cputrain)
static_build() {
    if ! "$@" $flags > "$work/cc.log" 2>&1; then
        # --static also follows the dependencies' own Libs.private (hwloc's
        # -ludev): each needs its -dev package's libX.so link installed.
        if grep -q 'cannot find -l' "$work/cc.log"; then
            echo "     (a library named by a dependency's Libs.private is not installed;" \
                 "for -ludev install libudev-dev)" >> "$work/cc.log"
        fi
        fail "static build: $* $flags" "$work/cc.log"
    fi
}
static_build $CC -std=c99 -Wall -Wextra -Werror -o "$work/hello_c_static" "$src/hello.c"
static_build $CXX -std=c++11 -Wall -Wextra -Werror -o "$work/hello_cxx_static" "$src/hello.cpp"
ok "hello.c and hello.cpp build with pkg-config --static (no .so in the prefix)"

for prog in hello_c_static hello_cxx_static; do
    readelf -d "$work/$prog" > "$work/dynamic"
    if grep NEEDED "$work/dynamic" | grep -q libcputrain; then
        grep NEEDED "$work/dynamic" > "$work/needed"
        fail "$prog still needs libcputrain.so" "$work/needed"
    fi
    env -u LD_LIBRARY_PATH "$work/$prog" > "$work/run.log" 2>&1 ||
        fail "$prog (static)" "$work/run.log"
    cat "$work/run.log"
done
ok "static programs run and do not need libcputrain.so"

echo "pkgconfig: $step passed, 0 failed"
