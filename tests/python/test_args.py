"""TrainingArgs: typed attributes over the library's field table, values as
command-line text, and the lifetime of the handle. Tests that walk the
table rather than naming fields keep working as fields are added."""

import copy
import gc
import pathlib
import pickle
import unittest

from cputrain import ArgFate, ArgType, CputrainError, Status, TrainingArgs

PY_TYPE = {ArgType.BOOL: bool, ArgType.INT: int, ArgType.FLOAT: float,
           ArgType.STRING: str, ArgType.CHOICE: str}


def other_value(field):
    """A value of the field's type that differs from its default."""
    if field.type == ArgType.BOOL:
        return not field.default
    if field.type == ArgType.INT:
        return 7 if field.default != 7 else 8
    if field.type == ArgType.FLOAT:
        return 0.25 if field.default != 0.25 else 0.5
    if field.type == ArgType.CHOICE:
        return field.choices[-1] if field.default != field.choices[-1] else field.choices[0]
    return "some/path"


class FieldTableTest(unittest.TestCase):

    def test_table_has_the_hugging_face_basics(self):
        fields = {f.name: f for f in TrainingArgs.fields()}
        self.assertEqual(fields["learning_rate"].type, ArgType.FLOAT)
        self.assertEqual(fields["learning_rate"].default, 5e-05)
        self.assertEqual(fields["bf16"].type, ArgType.BOOL)
        self.assertIs(fields["bf16"].default, False)
        self.assertEqual(fields["seed"].default, 42)
        self.assertEqual(fields["output_dir"].type, ArgType.STRING)

    def test_names_are_unique(self):
        names = [f.name for f in TrainingArgs.fields()]
        self.assertEqual(len(names), len(set(names)))

    def test_table_defaults_are_what_a_new_handle_holds(self):
        with TrainingArgs() as args:
            values = args.to_dict()
        for field in TrainingArgs.fields():
            with self.subTest(field=field.name):
                self.assertEqual(values[field.name], field.default)

    def test_choice_fields_list_their_choices(self):
        for field in TrainingArgs.fields():
            with self.subTest(field=field.name):
                if field.type == ArgType.CHOICE:
                    self.assertTrue(field.choices)
                    if field.default is not None:
                        self.assertIn(field.default, field.choices)
                else:
                    self.assertEqual(field.choices, ())

    def test_no_field_is_shadowed_by_a_method(self):
        # A field called e.g. "copy" would be unreachable as an attribute.
        clashes = {f.name for f in TrainingArgs.fields()} & set(vars(TrainingArgs))
        self.assertEqual(clashes, set())

    def test_help_lists_every_field(self):
        text = TrainingArgs.help()
        for field in TrainingArgs.fields():
            self.assertIn("--" + field.name, text)


class TypedAttributeTest(unittest.TestCase):

    def setUp(self):
        self.args = TrainingArgs()
        self.addCleanup(self.args.close)

    def test_each_field_reads_as_its_python_type(self):
        for field in TrainingArgs.fields():
            with self.subTest(field=field.name):
                value = getattr(self.args, field.name)
                if value is None:
                    self.assertTrue(field.optional)
                else:
                    self.assertIs(type(value), PY_TYPE[field.type])

    def test_each_field_round_trips_a_new_value(self):
        for field in TrainingArgs.fields():
            with self.subTest(field=field.name):
                value = other_value(field)
                setattr(self.args, field.name, value)
                self.assertEqual(getattr(self.args, field.name), value)
                if field.optional:
                    setattr(self.args, field.name, None)
                    self.assertIsNone(getattr(self.args, field.name))
                    self.assertFalse(self.args.is_set(field.name))

    def test_abbreviations_as_argparse_and_suggestions(self):
        rest = self.args.parse(["--learning_rat", "3e-5", "--max_seq", "64", "--doc=8"],
                               own_names=["max_seq_length", "doc_stride"])
        self.assertEqual(self.args.learning_rate, 3e-5)
        self.assertEqual(rest, ["--max_seq_length", "64", "--doc_stride=8"])
        with self.assertRaises(CputrainError) as cm:
            self.args.parse(["--see", "1"], own_names=["seedling"])
        self.assertIn("could match --seed, --seedling", cm.exception.message)
        self.assertEqual(TrainingArgs.closest_name("learning_rte"), "learning_rate")
        self.assertEqual(TrainingArgs.closest_name("seedlin", ["seedling"]), "seedling")
        self.assertIsNone(TrainingArgs.closest_name("zzzzzzzzzz"))

    def test_int_is_accepted_for_a_float_field(self):
        self.args.learning_rate = 1
        self.assertEqual(self.args.learning_rate, 1.0)
        self.assertIs(type(self.args.learning_rate), float)

    def test_wrong_python_types_are_type_errors_naming_the_field(self):
        cases = [("bf16", 1), ("seed", 1.5), ("seed", True), ("seed", "7"),
                 ("learning_rate", True), ("output_dir", 3), ("lr_scheduler_type", 1)]
        for name, value in cases:
            with self.subTest(field=name, value=value):
                with self.assertRaises(TypeError) as cm:
                    setattr(self.args, name, value)
                self.assertIn(name, str(cm.exception))

    def test_text_for_a_typed_field_points_at_set(self):
        with self.assertRaisesRegex(TypeError, r"set\('learning_rate', text\)"):
            self.args.learning_rate = "3e-5"

    def test_none_for_a_required_field_is_a_type_error(self):
        with self.assertRaisesRegex(TypeError, "seed"):
            self.args.seed = None

    def test_int_beyond_64_bits_is_an_overflow_error(self):
        with self.assertRaises(OverflowError):
            self.args.seed = 1 << 63
        self.args.seed = (1 << 63) - 1
        self.assertEqual(self.args.seed, (1 << 63) - 1)
        self.args.seed = -(1 << 63)
        self.assertEqual(self.args.seed, -(1 << 63))

    def test_path_objects_are_accepted_for_string_fields(self):
        self.args.output_dir = pathlib.Path("runs") / "a"
        self.assertEqual(self.args.output_dir, "runs/a")

    def test_embedded_nul_is_refused(self):
        with self.assertRaises(ValueError):
            self.args.output_dir = "a\0b"

    def test_non_ascii_text_round_trips(self):
        self.args.output_dir = "résultats/✓"
        self.assertEqual(self.args.output_dir, "résultats/✓")

    def test_invalid_choice_raises_naming_the_field(self):
        with self.assertRaises(CputrainError) as cm:
            self.args.lr_scheduler_type = "bogus"
        self.assertEqual(cm.exception.status, Status.ERR_INVALID_ARG)
        self.assertEqual(cm.exception.status_name, "CT_ERR_INVALID_ARG")
        self.assertIn("lr_scheduler_type", cm.exception.message)
        self.assertEqual(self.args.lr_scheduler_type, "linear")

    def test_unknown_names_are_attribute_errors(self):
        with self.assertRaises(AttributeError):
            self.args.no_such_field
        with self.assertRaises(AttributeError):
            self.args.no_such_field = 1
        self.assertFalse(hasattr(self.args, "learning_rat"))

    def test_methods_cannot_be_overwritten(self):
        with self.assertRaises(AttributeError):
            self.args.parse = None

    def test_deprecated_alias_reads_and_writes_its_field(self):
        if TrainingArgs._field("no_cuda") is None:
            self.skipTest("the library has no no_cuda alias")
        self.args.no_cuda = True
        self.assertIs(self.args.use_cpu, True)
        self.assertIs(self.args.no_cuda, True)

    def test_dir_lists_fields(self):
        self.assertIn("learning_rate", dir(self.args))


class ConstructorTest(unittest.TestCase):

    def test_keyword_overrides(self):
        with TrainingArgs(bf16=True, learning_rate=3e-5, output_dir="o") as args:
            self.assertIs(args.bf16, True)
            self.assertEqual(args.learning_rate, 3e-5)
            self.assertEqual(args.output_dir, "o")

    def test_unknown_keyword_is_a_type_error(self):
        with self.assertRaisesRegex(TypeError, "learning_rat"):
            TrainingArgs(learning_rat=1.0)

    def test_result_is_validated(self):
        with self.assertRaises(CputrainError) as cm:
            TrainingArgs(bf16=True, fp16=True)
        self.assertIn("fp16", cm.exception.message)


class TextValueTest(unittest.TestCase):

    def setUp(self):
        self.args = TrainingArgs()
        self.addCleanup(self.args.close)

    def test_set_parses_command_line_text(self):
        self.args.set("learning_rate", "3e-5")
        self.assertEqual(self.args.learning_rate, 3e-5)
        self.args.set("bf16", "yes")
        self.assertIs(self.args.bf16, True)

    def test_get_writes_python_repr_forms(self):
        self.args.learning_rate = 3e-5
        self.assertEqual(self.args.get("learning_rate"), "3e-05")
        self.assertEqual(self.args.get("bf16"), "False")
        self.assertEqual(self.args.get("seed"), "42")
        self.args.output_dir = None
        self.assertEqual(self.args.get("output_dir"), "None")

    def test_get_grows_its_buffer_for_long_values(self):
        long_path = "d/" * 500 + "end"
        self.args.output_dir = long_path
        self.assertEqual(self.args.get("output_dir"), long_path)
        for n in range(60, 70):  # around the first buffer's size
            self.args.output_dir = "x" * n
            self.assertEqual(self.args.get("output_dir"), "x" * n)

    def test_unknown_field_is_not_found_naming_it(self):
        for call in (lambda: self.args.get("nope_field"),
                     lambda: self.args.set("nope_field", "1"),
                     lambda: self.args.is_set("nope_field")):
            with self.assertRaises(CputrainError) as cm:
                call()
            self.assertEqual(cm.exception.status, Status.ERR_NOT_FOUND)
            self.assertIn("nope_field", cm.exception.message)

    def test_bad_text_is_invalid_arg_naming_the_field(self):
        with self.assertRaises(CputrainError) as cm:
            self.args.set("seed", "abc")
        self.assertEqual(cm.exception.status_name, "CT_ERR_INVALID_ARG")
        self.assertIn("seed", cm.exception.message)
        self.assertIn("abc", cm.exception.message)
        self.assertEqual(self.args.seed, 42)


class ParseTest(unittest.TestCase):

    def setUp(self):
        self.args = TrainingArgs()
        self.addCleanup(self.args.close)

    def test_done_criterion(self):
        rest = self.args.parse(["--bf16", "--learning_rate", "3e-5", "--output_dir", "o"])
        self.assertEqual(rest, [])
        self.assertEqual(str(self.args.learning_rate), "3e-05")
        self.assertIs(self.args.bf16, True)
        self.assertEqual(self.args.output_dir, "o")

    def test_other_arguments_come_back_in_order(self):
        rest = self.args.parse(["--model_name_or_path", "bert", "--bf16", "--help", "extra"])
        self.assertEqual(rest, ["--model_name_or_path", "bert", "--help", "extra"])
        self.assertEqual(self.args.unparsed(), rest)

    def test_unparsed_is_from_the_last_parse_only(self):
        self.args.parse(["--x", "1"])
        self.assertEqual(self.args.parse(["--seed", "3"]), [])

    def test_argument_forms(self):
        self.args.parse(["--learning_rate=1e-4", "--per-device-train-batch-size", "4",
                         "--bf16", "false", "--seed=7"])
        self.assertEqual(self.args.learning_rate, 1e-4)
        self.assertEqual(self.args.per_device_train_batch_size, 4)
        self.assertIs(self.args.bf16, False)
        self.assertEqual(self.args.seed, 7)
        self.args.parse(["--bf16=true"])
        self.assertIs(self.args.bf16, True)

    def test_no_flag_for_booleans_that_default_to_true(self):
        true_bools = [f for f in TrainingArgs.fields()
                      if f.type == ArgType.BOOL and f.default is True]
        if not true_bools:
            self.skipTest("no boolean field defaults to True")
        for field in true_bools:
            with self.subTest(field=field.name):
                self.args.parse(["--no_" + field.name])
                self.assertIs(getattr(self.args, field.name), False)

    def test_optional_field_takes_none(self):
        self.args.parse(["--data_seed", "5"])
        self.assertEqual(self.args.data_seed, 5)
        self.args.parse(["--data_seed", "None"])
        self.assertIsNone(self.args.data_seed)

    def test_failure_changes_nothing(self):
        before = self.args.to_dict()
        with self.assertRaises(CputrainError) as cm:
            self.args.parse(["--seed", "7", "--learning_rate", "abc", "--extra"])
        self.assertIn("learning_rate", cm.exception.message)
        self.assertEqual(self.args.to_dict(), before)
        self.assertEqual(self.args.unparsed(), [])

    def test_missing_value_names_the_option(self):
        with self.assertRaises(CputrainError) as cm:
            self.args.parse(["--learning_rate"])
        self.assertIn("learning_rate", cm.exception.message)

    def test_result_is_validated(self):
        with self.assertRaises(CputrainError) as cm:
            self.args.parse(["--bf16", "--fp16"])
        self.assertIn("fp16", cm.exception.message)
        self.assertIs(self.args.bf16, False)

    def test_empty_command_line(self):
        self.assertEqual(self.args.parse([]), [])
        self.assertEqual(self.args.seed, 42)

    def test_default_argv_is_sys_argv(self):
        from unittest import mock
        with mock.patch("sys.argv", ["prog", "--seed", "9", "left"]):
            self.assertEqual(self.args.parse(), ["left"])
        self.assertEqual(self.args.seed, 9)

    def test_paths_and_non_ascii_arguments(self):
        rest = self.args.parse(["--output_dir", pathlib.Path("out"), "--note", "héllo ✓"])
        self.assertEqual(self.args.output_dir, "out")
        self.assertEqual(rest, ["--note", "héllo ✓"])

    def test_embedded_nul_is_refused(self):
        with self.assertRaises(ValueError):
            self.args.parse(["--output_dir", "a\0b"])

    def test_a_single_string_is_not_an_argument_list(self):
        with self.assertRaises(TypeError):
            self.args.parse("--bf16")


class LifetimeTest(unittest.TestCase):

    def test_closed_handle_refuses_use(self):
        args = TrainingArgs()
        args.close()
        args.close()  # twice is fine
        with self.assertRaisesRegex(ValueError, "closed"):
            args.seed
        with self.assertRaisesRegex(ValueError, "closed"):
            args.parse([])
        self.assertIn("closed", repr(args))

    def test_context_manager_closes(self):
        with TrainingArgs() as args:
            pass
        with self.assertRaises(ValueError):
            args.to_dict()

    def test_copy_is_independent_and_keeps_unparsed(self):
        with TrainingArgs() as args:
            args.parse(["--seed", "3", "--extra", "x"])
            dup = args.copy()
            args.seed = 4
            self.assertEqual(dup.seed, 3)
            self.assertEqual(dup.unparsed(), ["--extra", "x"])
            self.assertEqual(copy.copy(args), args)
            self.assertEqual(copy.deepcopy(args), args)
            dup.close()

    def test_equality_compares_values(self):
        a, b = TrainingArgs(), TrainingArgs()
        self.assertEqual(a, b)
        b.seed = 1
        self.assertNotEqual(a, b)
        self.assertNotEqual(a, {"seed": 42})

    def test_pickle_round_trip(self):
        with TrainingArgs(learning_rate=1e-3, output_dir="o") as args:
            args.data_seed = None
            back = pickle.loads(pickle.dumps(args))
            self.assertEqual(back, args)
            back.close()

    def test_many_handles_are_freed_when_collected(self):
        for _ in range(2000):
            TrainingArgs().seed = 1
        gc.collect()

    def test_repr_has_the_layout_of_training_arguments(self):
        with TrainingArgs(learning_rate=3e-5, output_dir="o") as args:
            text = repr(args)
        self.assertTrue(text.startswith("TrainingArgs(\n"), text[:40])
        self.assertTrue(text.endswith(",\n)"))
        self.assertIn("\nlearning_rate=3e-05,\n", text)
        self.assertIn("\noutput_dir=o,\n", text)
        lines = text.splitlines()[1:-1]
        self.assertEqual(lines, sorted(lines))
        self.assertEqual(len(lines), len(TrainingArgs.fields()))


def _other_text(arg):
    """Command-line text that differs from a known argument's default."""
    if arg.type == ArgType.BOOL:
        return "False" if arg.default.startswith("True") else "True"
    return {ArgType.INT: "7", ArgType.FLOAT: "0.25"}.get(arg.type, "x-test")


class FateTableTest(unittest.TestCase):
    """The fate of every Transformers / run_qa.py argument, as Python sees it:
    the same table as the C library's, walked whole."""

    def setUp(self):
        import cputrain
        self.warnings = []
        cputrain.set_log_callback(lambda level, message: self.warnings.append(message))
        self.addCleanup(cputrain.set_log_callback, cputrain.log_to_python_logging)
        self.addCleanup(cputrain.set_log_level, cputrain.get_log_level())
        cputrain.set_log_level("warning")

    def test_fields_come_first_and_are_implemented(self):
        known = TrainingArgs.known_arguments()
        fields = TrainingArgs.fields()
        self.assertEqual([k.name for k in known[:len(fields)]], [f.name for f in fields])
        self.assertTrue(all(k.fate == ArgFate.IMPLEMENTED for k in known[:len(fields)]))
        for name in ("push_to_hub", "dataloader_num_workers", "max_seq_length", "cache_dir"):
            self.assertIn(name, {k.name for k in known})

    def test_no_effect_arguments_warn_with_their_reason(self):
        walked = 0
        for arg in TrainingArgs.known_arguments():
            if arg.fate != ArgFate.NO_EFFECT:
                continue
            with TrainingArgs() as args:
                del self.warnings[:]
                args.set(arg.name, _other_text(arg))
                self.assertEqual(len(self.warnings), 1, (arg.name, self.warnings))
                self.assertIn(arg.reason, self.warnings[0])
                self.assertIn("--%s" % arg.name, self.warnings[0])
            walked += 1
        self.assertGreater(walked, 40)

    def test_refused_arguments_raise_with_their_reason(self):
        walked = 0
        with TrainingArgs() as args:
            for arg in TrainingArgs.known_arguments():
                if arg.fate != ArgFate.REFUSED:
                    continue
                with self.assertRaises(CputrainError) as caught:
                    args.set(arg.name, _other_text(arg))
                self.assertEqual(caught.exception.status, Status.ERR_UNSUPPORTED)
                self.assertIn(arg.reason, str(caught.exception))
                walked += 1
        self.assertGreater(walked, 20)
        self.assertEqual(self.warnings, [])

    def test_transformers_keywords_and_attributes(self):
        # TrainingArguments(dataloader_num_workers=4, push_to_hub=False) works
        # here too: no effect with a warning; a refused value raises.
        with TrainingArgs(dataloader_num_workers=4, push_to_hub=False,
                          save_safetensors=True) as args:
            self.assertEqual(len(self.warnings), 1)
            self.assertIn("dataloader_num_workers 4 has no effect", self.warnings[0])
            with self.assertRaisesRegex(CputrainError, "Hub's CLI"):
                args.push_to_hub = True
            with self.assertRaisesRegex(CputrainError, "only safetensors is written"):
                args.save_safetensors = False
        with self.assertRaisesRegex(CputrainError, "kernels are compiled"):
            TrainingArgs(torch_compile=True)

    def test_parse_consumes_no_effect_names_and_keeps_run_qa_names(self):
        with TrainingArgs() as args:
            args.parse(["--dataloader_num_workers", "2", "--max_seq_length", "256",
                        "--cache_dir", "/tmp"])
            self.assertEqual(args.unparsed(), ["--max_seq_length", "256", "--cache_dir", "/tmp"])
            self.assertEqual(len(self.warnings), 1)


if __name__ == "__main__":
    unittest.main()
