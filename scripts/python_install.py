"""Helpers of `make install` for the Python package, run by the interpreter
it installs for:

  python_install.py sitedir PREFIX
      the folder the cputrain package goes in under PREFIX, as that
      interpreter lays out its packages: the one of its own sys.path entries
      that an install scheme places under PREFIX (Debian: /usr ->
      /usr/lib/python3/dist-packages, /usr/local ->
      /usr/local/lib/python3.X/dist-packages), else the upstream layout,
      PREFIX/lib/python3.X/site-packages (which PYTHONPATH must then name).
  python_install.py installed LIBDIR PACKAGE_DIR
      the text of cputrain/_installed.py: LIBDIR, and LIBDIR relative to
      PACKAGE_DIR (both as installed, without DESTDIR), which _lib.py tries
      first so that a staged or moved prefix loads its own library.
"""

import os
import sys
import sysconfig


def scheme_path(scheme, base):
    if scheme not in sysconfig.get_scheme_names():
        return None
    return os.path.normpath(sysconfig.get_path("purelib", scheme,
                                               vars={"base": base, "platbase": base}))


def sitedir(prefix):
    prefix = os.path.normpath(prefix)
    candidates = [scheme_path("deb_system", prefix), scheme_path("posix_prefix", prefix)]
    # Debian's posix_local scheme adds "local" to its base: /usr gives
    # /usr/local/lib/python3.X/dist-packages.
    if os.path.basename(prefix) == "local":
        candidates.append(scheme_path("posix_local", os.path.dirname(prefix)))
    on_path = {os.path.normpath(p) for p in sys.path if p}
    for path in candidates:
        if path is not None and path in on_path:
            return path
    return scheme_path("posix_prefix", prefix)


def installed(libdir, package_dir):
    return ("# Written by `make install`: where it put libcputrain (read by _lib.py).\n"
            "LIBDIR = %r\nLIBDIR_FROM_PACKAGE = %r\n"
            % (libdir, os.path.relpath(libdir, package_dir)))


def main(argv):
    absolute = all(a.startswith("/") for a in argv[2:])
    if len(argv) == 3 and argv[1] == "sitedir" and absolute:
        print(sitedir(argv[2]))
    elif len(argv) == 4 and argv[1] == "installed" and absolute:
        sys.stdout.write(installed(os.path.normpath(argv[2]), os.path.normpath(argv[3])))
    else:
        sys.exit("usage: python_install.py sitedir /PREFIX | installed /LIBDIR /PACKAGE_DIR")


if __name__ == "__main__":
    main(sys.argv)
