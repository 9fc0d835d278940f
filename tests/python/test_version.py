"""Finding the library and refusing one of another major version."""

import ctypes.util
import os
import re
import subprocess
import sys
import types
import unittest
from unittest import mock

import cputrain
from cputrain import _lib


class VersionTest(unittest.TestCase):

    def test_version_is_the_loaded_library_s(self):
        self.assertRegex(cputrain.__version__, r"^\d+\.\d+\.\d+$")
        self.assertEqual(cputrain.__version__, _lib.lib.ct_version_string().decode())
        number = _lib.lib.ct_version_number()
        self.assertEqual(_lib.format_version(number), cputrain.__version__)
        self.assertEqual(number // 10000, cputrain.API_MAJOR)

    def test_kernel_isa(self):
        self.assertIn(cputrain.kernel_isa(), ("generic", "avx2", "avx512", "avx512bf16", "amx"))
        self.assertEqual(cputrain.kernel_isa(), _lib.lib.ct_kernel_isa().decode())

    def test_same_major_is_accepted(self):
        _lib.check_version(_lib.API_MAJOR * 10000 + 99 * 100 + 3, "lib")
        _lib.check_version(_lib.API_MIN_VERSION, "lib")

    def test_other_major_is_refused_with_both_versions(self):
        newer = (_lib.API_MAJOR + 1) * 10000 + 2 * 100
        with self.assertRaises(ImportError) as cm:
            _lib.check_version(newer, "/x/libcputrain.so")
        text = str(cm.exception)
        self.assertIn("/x/libcputrain.so", text)
        self.assertIn(_lib.format_version(newer), text)
        self.assertIn("major version %d" % _lib.API_MAJOR, text)
        self.assertIn("CPUTRAIN_LIBRARY", text)

    def test_older_than_supported_is_refused(self):
        with mock.patch.object(_lib, "API_MIN_VERSION", _lib.API_MAJOR * 10000 + 5000):
            with self.assertRaisesRegex(ImportError, "older than"):
                _lib.check_version(_lib.API_MAJOR * 10000 + 100, "lib")

    def test_loading_the_real_library_under_another_expected_major_fails(self):
        with mock.patch.object(_lib, "API_MAJOR", _lib.API_MAJOR + 1):
            with self.assertRaisesRegex(ImportError, "major version"):
                _lib.load_library(cputrain.library_path)

    def test_a_library_that_is_not_cputrain_is_refused(self):
        libm = ctypes.util.find_library("m")
        if not libm:
            self.skipTest("no libm to load")
        with self.assertRaisesRegex(ImportError, "not libcputrain"):
            _lib.load_library(libm)

    def test_missing_functions_are_named(self):
        partial = types.SimpleNamespace(**{name: types.SimpleNamespace()
                                           for name in _lib.PROTOTYPES if name != "ct_args_help"})
        with self.assertRaisesRegex(ImportError, "ct_args_help"):
            _lib.declare(partial, "old.so")


class FindLibraryTest(unittest.TestCase):

    def test_explicit_path_is_the_only_candidate(self):
        with mock.patch.dict(os.environ, {"CPUTRAIN_LIBRARY": "/opt/x/libcputrain.so.0"}):
            self.assertEqual(_lib.candidate_paths(), ["/opt/x/libcputrain.so.0"])

    def test_without_it_the_build_tree_then_the_system(self):
        env = {k: v for k, v in os.environ.items() if k != "CPUTRAIN_LIBRARY"}
        with mock.patch.dict(os.environ, env, clear=True):
            paths = _lib.candidate_paths()
        soname = "libcputrain.so.%d" % _lib.API_MAJOR
        self.assertIn(soname, paths)
        build = [p for p in paths if os.sep + "build" + os.sep in p]
        for p in build:
            self.assertTrue(p.endswith(os.path.join("build", "lib", soname)), p)
            self.assertLess(paths.index(p), paths.index(soname))

    def test_an_installed_package_looks_in_its_libdir_first(self):
        """What `make install` writes in _installed.py: LIBDIR, tried after
        the same folder relative to the package (a staged or moved prefix
        loads its own copy); the source tree's build/ is not looked at."""
        import tempfile
        soname = "libcputrain.so.%d" % _lib.API_MAJOR
        env = {k: v for k, v in os.environ.items() if k != "CPUTRAIN_LIBRARY"}
        with tempfile.TemporaryDirectory() as tmp:
            package, staged, libdir = (os.path.join(tmp, d) for d in
                                       ("stage/lib/python3/site-packages/cputrain", "stage/lib",
                                        "lib"))
            for folder in (package, staged, libdir):
                os.makedirs(folder, exist_ok=True)
            for folder in (staged, libdir):
                open(os.path.join(folder, soname), "w").close()
            installed = types.ModuleType("cputrain._installed")
            installed.LIBDIR = libdir
            installed.LIBDIR_FROM_PACKAGE = "../../.."
            with mock.patch.dict(sys.modules, {"cputrain._installed": installed}), \
                    mock.patch.dict(os.environ, env, clear=True):
                self.assertEqual(_lib.installed_paths(package, soname),
                                 [os.path.join(staged, soname), os.path.join(libdir, soname)])
                os.unlink(os.path.join(staged, soname))
                self.assertEqual(_lib.installed_paths(package, soname),
                                 [os.path.join(libdir, soname)])
                paths = _lib.candidate_paths()
            self.assertFalse([p for p in paths if os.sep + "build" + os.sep in p], paths)
            self.assertIn(soname, paths)
        # From the source tree there is no _installed.py.
        self.assertIsNone(_lib.installed_paths(os.path.dirname(_lib.__file__), soname))

    def run_import(self, library):
        package_dir = os.path.dirname(os.path.dirname(cputrain.__file__))
        env = dict(os.environ, PYTHONPATH=package_dir, CPUTRAIN_LIBRARY=library)
        return subprocess.run([sys.executable, "-c", "import cputrain"], env=env,
                              capture_output=True, text=True, timeout=60)

    def test_unloadable_explicit_library_is_a_clear_import_error(self):
        result = self.run_import("/nonexistent/libcputrain.so.0")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("ImportError", result.stderr)
        self.assertIn("/nonexistent/libcputrain.so.0", result.stderr)
        self.assertIn("CPUTRAIN_LIBRARY", result.stderr)

    def test_explicit_library_is_the_one_loaded(self):
        result = self.run_import(cputrain.library_path)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue(re.search(r"libcputrain", cputrain.library_path))


if __name__ == "__main__":
    unittest.main()
