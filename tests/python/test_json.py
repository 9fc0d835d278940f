"""training_args.json through the binding: save, load, and a JSON file
given to parse(), in a temporary folder."""

import json
import os
import tempfile
import unittest

from cputrain import CputrainError, Status, TrainingArgs


class JsonTest(unittest.TestCase):

    def setUp(self):
        tmp = tempfile.TemporaryDirectory(prefix="cputrain-test-")
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name
        self.args = TrainingArgs()
        self.addCleanup(self.args.close)

    def path(self, name):
        return os.path.join(self.dir, name)

    def write(self, name, obj):
        path = self.path(name)
        with open(path, "w") as f:
            f.write(obj if isinstance(obj, str) else json.dumps(obj))
        return path

    def test_save_then_load_round_trips_every_field(self):
        self.args.parse(["--bf16", "--learning_rate", "3e-5", "--output_dir", "o",
                         "--lr_scheduler_type", "cosine", "--data_seed", "11"])
        path = self.path("training_args.json")
        self.args.save_json(path)
        with TrainingArgs() as loaded:
            self.assertEqual(loaded.load_json(path), [])
            self.assertEqual(loaded, self.args)

    def test_saved_file_is_python_json_of_every_field(self):
        self.args.output_dir = "o"
        path = self.path("training_args.json")
        self.args.save_json(path)
        with open(path) as f:
            text = f.read()
        saved = json.loads(text)
        self.assertEqual(list(saved), [f.name for f in TrainingArgs.fields()])
        self.assertEqual(saved, self.args.to_dict())
        self.assertIn('\n  "output_dir": "o"', text)  # indent=2, as json.dumps writes

    def test_path_objects_are_accepted(self):
        import pathlib
        path = pathlib.Path(self.dir) / "a.json"
        self.args.save_json(path)
        self.args.load_json(path)

    def test_unknown_keys_come_back_as_options(self):
        path = self.write("a.json", {"seed": 3, "model_name_or_path": "bert"})
        self.assertEqual(self.args.load_json(path), ["--model_name_or_path", "bert"])
        self.assertEqual(self.args.seed, 3)

    def test_parse_of_a_single_json_argument_loads_it(self):
        path = self.write("args.json", {"bf16": True, "learning_rate": 2e-5})
        self.assertEqual(self.args.parse([path]), [])
        self.assertIs(self.args.bf16, True)
        self.assertEqual(self.args.learning_rate, 2e-5)

    def test_null_unsets_an_optional_field(self):
        self.args.data_seed = 5
        self.args.load_json(self.write("a.json", {"data_seed": None}))
        self.assertIsNone(self.args.data_seed)

    def test_missing_file_is_io_error_naming_it(self):
        path = self.path("absent.json")
        with self.assertRaises(CputrainError) as cm:
            self.args.load_json(path)
        self.assertEqual(cm.exception.status, Status.ERR_IO)
        self.assertIn(path, cm.exception.message)

    def test_malformed_file_is_format_error_and_changes_nothing(self):
        path = self.write("bad.json", '{"seed": 3,')
        with self.assertRaises(CputrainError) as cm:
            self.args.load_json(path)
        self.assertEqual(cm.exception.status, Status.ERR_FORMAT)
        self.assertIn(path, cm.exception.message)
        self.assertEqual(self.args.seed, 42)

    def test_wrong_value_type_names_the_field(self):
        path = self.write("a.json", {"seed": 1, "learning_rate": "fast"})
        with self.assertRaises(CputrainError) as cm:
            self.args.load_json(path)
        self.assertEqual(cm.exception.status_name, "CT_ERR_FORMAT")
        self.assertIn("learning_rate", cm.exception.message)
        self.assertEqual(self.args.seed, 42)

    def test_invalid_combination_is_refused(self):
        path = self.write("a.json", {"bf16": True, "fp16": True})
        with self.assertRaises(CputrainError) as cm:
            self.args.load_json(path)
        self.assertIn("fp16", cm.exception.message)
        self.assertIs(self.args.bf16, False)

    def test_save_into_a_missing_folder_is_io_error(self):
        path = os.path.join(self.dir, "no", "such", "dir", "a.json")
        with self.assertRaises(CputrainError) as cm:
            self.args.save_json(path)
        self.assertEqual(cm.exception.status, Status.ERR_IO)
        self.assertIn("no/such/dir", cm.exception.message)


if __name__ == "__main__":
    unittest.main()
