#!/bin/sh
# shellcheck disable=SC2086 # compiler and flag variables are split on purpose
# Installs the library and proves that pkg-config is all a program needs:
#  - into a temporary prefix: the version it reports is the header's, and
#    hello.c / hello.cpp build and run against the shared library with
#    `pkg-config --cflags --libs cputrain` (found through LD_LIBRARY_PATH, or
#    through an rpath to `pkg-config --variable=libdir cputrain`);
#  - into a DESTDIR staging tree (pkg-config reading it through
#    PKG_CONFIG_SYSROOT_DIR): `pkg-config --libs cputrain-static` links the
#    archive although libcputrain.so sits beside it, so the programs run
#    without libcputrain.so (no NEEDED entry for it);
#  - the Python package that both installs put in the interpreter's
#    site-packages loads its own install's library, with no
#    CPUTRAIN_LIBRARY, from outside the source tree;
#  - make uninstall removes every file the install wrote, Python's too.
# Reads B, MAKE, CC, CXX, PYTHON (and PKG_CONFIG) from the environment, as
# tests/run_all.sh passes them; run from anywhere.
set -eu
: "${B:=build}" "${MAKE:=make}" "${CC:=cc}" "${CXX:=c++}" "${PKG_CONFIG:=pkg-config}"
: "${PYTHON:=/usr/bin/python3}"

cd "$(dirname "$0")/../.."
src=tests/pkgconfig
work=$(mktemp -d "${TMPDIR:-/tmp}/cputrain-pkgconfig.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

step=0
ok() { step=$((step + 1)); echo "ok   $*"; }
fail() {
    echo "FAIL $1"
    [ $# -lt 2 ] || sed 's/^/     /' "$2"
    echo "pkgconfig: $step passed, 1 failed"
    exit 1
}

# install_into PREFIX [DESTDIR]
install_into() {
    $MAKE --no-print-directory install B="$B" PREFIX="$1" DESTDIR="${2:-}" \
        > "$work/install.log" 2>&1 ||
        fail "make install B=$B PREFIX=$1 DESTDIR=${2:-}" "$work/install.log"
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

# The rpath docs/api.md recommends for a prefix the loader does not search.
libdir=$(pc_flags "$shared" --variable=libdir cputrain)
[ "$libdir" = "$shared/lib" ] || fail "pkg-config --variable=libdir cputrain is '$libdir'"
$CC -std=c99 -Wall -Wextra -Werror -o "$work/hello_rpath" "$src/hello.c" $flags \
    -Wl,-rpath,"$libdir" > "$work/cc.log" 2>&1 || fail "build hello.c with an rpath" "$work/cc.log"
env -u LD_LIBRARY_PATH ldd "$work/hello_rpath" > "$work/ldd" 2>&1
grep -q "libcputrain.so.[0-9]* => $shared/lib/" "$work/ldd" ||
    fail "hello_rpath does not load libcputrain from $shared/lib" "$work/ldd"
env -u LD_LIBRARY_PATH "$work/hello_rpath" > "$work/run.log" 2>&1 ||
    fail "hello_rpath without LD_LIBRARY_PATH" "$work/run.log"
ok "with -Wl,-rpath,\$(pkg-config --variable=libdir cputrain) no LD_LIBRARY_PATH is needed"

# ---- static, from a DESTDIR staging tree ------------------------------
# libcputrain.so stays beside libcputrain.a: with `pkg-config --static
# cputrain` the linker would take the .so; cputrain-static.pc names the
# archive. pkg-config reads the staged files through the sysroot.
stage=$work/stage
prefix=/opt/cputrain-pkgconfig-test
install_into "$prefix" "$stage"
{ [ -e "$stage$prefix/lib/libcputrain.so" ] && [ -e "$stage$prefix/lib/libcputrain.a" ]; } ||
    fail "make install DESTDIR=$stage did not put libcputrain.so and .a in $stage$prefix/lib"
ok "make install PREFIX=$prefix DESTDIR=<staging tree>"
staged() {
    PKG_CONFIG_SYSROOT_DIR="$stage" PKG_CONFIG_PATH="$stage$prefix/lib/pkgconfig" $PKG_CONFIG "$@"
}
got=$(staged --modversion cputrain-static 2> "$work/pc.err") ||
    fail "pkg-config --modversion cputrain-static" "$work/pc.err"
[ "$got" = "$version" ] || fail "pkg-config --modversion cputrain-static is '$got', not $version"
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
for mode in "" --static; do
    flags=$(staged $mode --cflags --libs cputrain-static)
    case " $flags " in
    *" -l:libcputrain.a "*) ;;
    *) fail "pkg-config $mode --libs cputrain-static does not name the archive: $flags" ;;
    esac
    static_build $CC -std=c99 -Wall -Wextra -Werror -o "$work/hello_c_static" "$src/hello.c"
    static_build $CXX -std=c++11 -Wall -Wextra -Werror -o "$work/hello_cxx_static" "$src/hello.cpp"
    for prog in hello_c_static hello_cxx_static; do
        readelf -d "$work/$prog" > "$work/dynamic" || fail "readelf -d $prog"
        grep -q NEEDED "$work/dynamic" ||
            fail "readelf -d $prog shows no NEEDED at all" "$work/dynamic"
        if grep NEEDED "$work/dynamic" | grep -q libcputrain; then
            grep NEEDED "$work/dynamic" > "$work/needed"
            fail "$prog (pkg-config $mode cputrain-static) still needs libcputrain.so" \
                "$work/needed"
        fi
        env -u LD_LIBRARY_PATH "$work/$prog" > "$work/run.log" 2>&1 ||
            fail "$prog (static)" "$work/run.log"
        cat "$work/run.log"
    done
    ok "pkg-config ${mode:+$mode }--libs cputrain-static: the archive, not the .so beside it" \
       "(no NEEDED libcputrain.so); both run"
done

# ---- Python package -----------------------------------------------------
# Each install put the package where $PYTHON reads packages from under its
# prefix; outside the source tree and without CPUTRAIN_LIBRARY, it must load
# that install's library: the staged copy (through its path relative to the
# package) and the temporary prefix's.
sitedir() { "$PYTHON" -E scripts/python_install.py sitedir "$1"; }
check_python() { # check_python SITE_PACKAGES EXPECTED_LIBRARY
    { [ -f "$1/cputrain/__init__.py" ] && [ -f "$1/cputrain/_installed.py" ]; } ||
        fail "make install did not put the cputrain package in $1"
    (cd / && env -u CPUTRAIN_LIBRARY PYTHONPATH="$1" "$PYTHON" -c '
import os, sys, cputrain
args = cputrain.TrainingArgs()
args.parse(["--learning_rate", "3e-5", "--output_dir", "o"])
assert args.learning_rate == 3e-5, args.learning_rate
print(os.path.realpath(cputrain.library_path), cputrain.__version__,
      os.path.dirname(cputrain.__file__))') > "$work/py.log" 2>&1 ||
        fail "import cputrain from $1" "$work/py.log"
    want="$(readlink -f "$2") $version $1/cputrain"
    [ "$(cat "$work/py.log")" = "$want" ] ||
        { echo "expected: $want" >> "$work/py.log"; fail "cputrain from $1 loaded" "$work/py.log"; }
}
site=$(sitedir "$prefix")
check_python "$stage$site" "$stage$prefix/lib/libcputrain.so.$(part MAJOR)"
check_python "$(sitedir "$shared")" "$shared/lib/libcputrain.so.$(part MAJOR)"
ok "the installed Python package loads its install's library (DESTDIR and PREFIX)"

# ---- uninstall ------------------------------------------------------------
$MAKE --no-print-directory uninstall B="$B" PREFIX="$prefix" DESTDIR="$stage" \
    > "$work/uninstall.log" 2>&1 || fail "make uninstall DESTDIR=$stage" "$work/uninstall.log"
# Byte-compiled files the imports above left are the package's too.
find "$stage" ! -type d > "$work/left"
[ ! -s "$work/left" ] || fail "make uninstall left files behind" "$work/left"
ok "make uninstall removes everything it installed, the Python package too"

echo "pkgconfig: $step passed, 0 failed"
