"""Every CT_API function in the public headers is declared in the binding,
with argtypes and restype that match the C signature: ctypes does not check
a call against the real prototype, so a wrong width here corrupts silently."""

import ctypes
import glob
import os
import re
import unittest

import cputrain
from cputrain import _lib

INCLUDE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           "..", "..", "include", "cputrain")


def read_headers():
    """The public headers' text without comments and preprocessor lines."""
    text = ""
    for path in sorted(glob.glob(os.path.join(INCLUDE_DIR, "*.h"))):
        with open(path) as f:
            text += f.read() + "\n"
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)
    return text


def c_type_of(param):
    """'const char *name' -> 'const char *'; 'void' -> 'void'."""
    tokens = re.findall(r"\w+|\*", param)
    if len(tokens) > 1 and re.match(r"\w", tokens[-1]):
        tokens = tokens[:-1]  # the parameter's name
    return " ".join(tokens)


def split_params(params):
    params = params.strip()
    if params in ("", "void"):
        return []
    return [c_type_of(p) for p in params.split(",")]


class Header:
    """What the headers declare: functions, enum, opaque and callback types."""

    def __init__(self, text):
        self.enums = set(re.findall(r"typedef\s+enum\s+\w*\s*\{[^}]*\}\s*(\w+)\s*;", text))
        self.opaque = set(re.findall(r"typedef\s+struct\s+\w+\s+(\w+)\s*;", text))
        self.callbacks = {
            m.group(2): (c_type_of(m.group(1)), split_params(m.group(3)))
            for m in re.finditer(r"typedef\s+([\w\s\*]+?)\s*\(\s*\*\s*(\w+)\s*\)\s*\(([^)]*)\)\s*;", text)
        }
        self.functions = {
            m.group(2): (c_type_of(m.group(1)), split_params(m.group(3)))
            for m in re.finditer(r"\bCT_API\s+([\w\s\*]+?)\s*\b(ct_\w+)\s*\(([^)]*)\)\s*;", text)
        }


HEADER = Header(read_headers())

SCALARS = {
    "void": None,
    "int": ctypes.c_int,
    "unsigned": ctypes.c_uint,
    "unsigned int": ctypes.c_uint,
    "size_t": ctypes.c_size_t,
    "int32_t": ctypes.c_int32,
    "int64_t": ctypes.c_int64,
    "uint64_t": ctypes.c_uint64,
    "double": ctypes.c_double,
    "float": ctypes.c_float,
}


def expected_ctype(c_type):
    """The ctypes type a binding must use for `c_type`; KeyError if this
    test does not know the type yet (teach it rather than skip it)."""
    # Constness of pointers themselves does not change the ABI; only
    # "const char *" (a string in) vs "char *" (a buffer out) matters.
    head, star, tail = c_type.partition("*")
    stars = c_type.count("*")
    base = head.replace("const", "").split()
    base = " ".join(base)
    if stars == 0:
        if base in HEADER.enums:
            return ctypes.c_int
        if base in HEADER.callbacks:
            return HEADER.callbacks[base]
        return SCALARS[base]
    if stars == 1:
        if base == "char":
            return ctypes.c_char_p if "const" in head else ctypes.POINTER(ctypes.c_char)
        if base == "void":
            return ctypes.c_void_p
        if base in HEADER.opaque:
            return _lib.Handle
        if base in HEADER.callbacks:
            return ("pointer to", HEADER.callbacks[base])
        return ctypes.POINTER(expected_ctype(base))
    inner = head + "*" + tail.replace("const", "").rsplit("*", 1)[0]
    return ctypes.POINTER(expected_ctype(" ".join(inner.split())))


class DeclarationsTest(unittest.TestCase):

    def test_headers_were_found(self):
        self.assertGreater(len(HEADER.functions), 10, INCLUDE_DIR)

    def test_every_header_function_is_in_the_binding_table(self):
        missing = sorted(set(HEADER.functions) - set(_lib.PROTOTYPES))
        self.assertEqual(missing, [], "declare these in cputrain/_lib.py PROTOTYPES")

    def test_binding_declares_nothing_the_headers_do_not(self):
        stale = sorted(set(_lib.PROTOTYPES) - set(HEADER.functions))
        self.assertEqual(stale, [], "no longer in the headers")

    def check_callback(self, name, actual, expected):
        # A callback typedef: compare the CFUNCTYPE's own signature.
        restype, params = expected
        self.assertTrue(isinstance(actual, type) and issubclass(actual, ctypes._CFuncPtr),
                        "%s: %r is not a CFUNCTYPE" % (name, actual))
        self.assertIs(actual._restype_, expected_ctype(restype), name)
        self.assertEqual(list(actual._argtypes_), [expected_ctype(p) for p in params], name)

    def assert_ctype(self, where, actual, c_type):
        expected = expected_ctype(c_type)
        if isinstance(expected, tuple) and expected[0] == "pointer to":
            # An out-parameter receiving a callback: POINTER(the CFUNCTYPE).
            self.assertTrue(hasattr(actual, "_type_"), "%s: %r is not a pointer" % (where, actual))
            self.check_callback(where, actual._type_, expected[1])
        elif isinstance(expected, tuple):
            self.check_callback(where, actual, expected)
        else:
            self.assertIs(actual, expected, "%s: C type %r" % (where, c_type))

    def test_loaded_functions_have_the_header_signature(self):
        for name, (restype, params) in sorted(HEADER.functions.items()):
            with self.subTest(function=name):
                fn = getattr(cputrain._lib.lib, name)
                self.assertIsNotNone(fn.argtypes, "%s has no argtypes" % name)
                self.assertEqual(len(fn.argtypes), len(params), "%s: parameter count" % name)
                self.assert_ctype(name + " returns", fn.restype, restype)
                for i, (actual, c_type) in enumerate(zip(fn.argtypes, params)):
                    self.assert_ctype("%s parameter %d" % (name, i + 1), actual, c_type)

    def test_pointer_types_the_model_api_uses(self):
        # Two levels of pointer, const at either level, fixed-width ints.
        self.assertIs(expected_ctype("const float * *"),
                      ctypes.POINTER(ctypes.POINTER(ctypes.c_float)))
        self.assertIs(expected_ctype("float *"), ctypes.POINTER(ctypes.c_float))
        self.assertIs(expected_ctype("const int32_t *"), ctypes.POINTER(ctypes.c_int32))
        self.assertIs(expected_ctype("int64_t *"), ctypes.POINTER(ctypes.c_int64))
        self.assertIs(expected_ctype("const ct_batch *"), _lib.Handle)
        self.assertIs(expected_ctype("ct_model * *"), ctypes.POINTER(_lib.Handle))
        self.assertIs(expected_ctype("ct_task"), ctypes.c_int)
        self.assertEqual(HEADER.functions["ct_model_logits"],
                         ("ct_status", ["const ct_model *", "const float * *", "int *",
                                        "int64_t *"]))

    def test_types_the_optim_and_train_api_use(self):
        # In-arrays of int64 indices, double out-parameters, and callback
        # typedefs passed by value (a CFUNCTYPE whose own signature must match).
        self.assertIs(expected_ctype("const int64_t *"), ctypes.POINTER(ctypes.c_int64))
        self.assertIs(expected_ctype("double *"), ctypes.POINTER(ctypes.c_double))
        self.assertIs(expected_ctype("ct_event"), ctypes.c_int)
        self.assertIs(expected_ctype("const ct_dataset *"), _lib.Handle)
        self.assertEqual(HEADER.callbacks["ct_progress_fn"],
                         ("int", ["void *", "ct_event", "int64_t", "int64_t", "double",
                                  "const char *"]))
        self.assertEqual(HEADER.callbacks["ct_eval_fn"], ("ct_status", ["void *", "ct_trainer *"]))
        self.assertEqual(expected_ctype("ct_progress_fn"), HEADER.callbacks["ct_progress_fn"])
        self.check_callback("ct_progress_fn", _lib.PROGRESS_FN, HEADER.callbacks["ct_progress_fn"])
        self.check_callback("ct_eval_fn", _lib.EVAL_FN, HEADER.callbacks["ct_eval_fn"])
        self.assertIs(_lib.PROTOTYPES["ct_trainer_set_progress_callback"][1][1], _lib.PROGRESS_FN)
        self.assertIs(_lib.PROTOTYPES["ct_trainer_set_eval_callback"][1][1], _lib.EVAL_FN)
        # A callback of the wrong width is caught, not waved through.
        narrow = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                  ctypes.c_int64, ctypes.c_double, ctypes.c_char_p)
        with self.assertRaises(AssertionError):
            self.check_callback("narrow", narrow, HEADER.callbacks["ct_progress_fn"])

    def test_parser_reads_a_multi_line_declaration(self):
        # ct_args_get's parameters span two lines in args.h.
        self.assertEqual(HEADER.functions["ct_args_get"],
                         ("ct_status", ["const ct_args *", "const char *", "char *",
                                        "size_t", "size_t *"]))
        self.assertEqual(HEADER.functions["ct_args_field_count"], ("size_t", []))


if __name__ == "__main__":
    unittest.main()
