"""tools/cputrain-plot: the SVG it draws from a trainer_state.json is valid
XML with one polyline per series holding one point per finite logged value,
placed in step order; NaN / Infinity values are left out and said so; and
bad input (no file, malformed JSON, an empty log_history, a field of the
wrong type) is an error naming the file and the field that leaves no
picture, partial or otherwise, behind."""

import json
import math
import os
import re
import subprocess
import tempfile
import unittest
import xml.etree.ElementTree as ET

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SVG = "{http://www.w3.org/2000/svg}"


def plot_binary():
    """The tool beside the library under test (B/lib/.. -> B/bin), else the
    default build folder's."""
    lib = os.environ.get("CPUTRAIN_LIBRARY")
    if lib:
        candidate = os.path.join(os.path.dirname(os.path.abspath(lib)), "..", "bin",
                                 "cputrain-plot")
        if os.path.exists(candidate):
            return os.path.normpath(candidate)
    return os.path.join(ROOT, "build", "bin", "cputrain-plot")


PLOT = plot_binary()


def make_history():
    """20 logging entries (step 10..200) with a NaN loss at step 70 and an
    infinite grad_norm at step 120, an evaluation every 50 steps, and the
    final summary entry that has nothing to draw."""
    log = []
    for step in range(10, 210, 10):
        entry = {"epoch": step / 100, "grad_norm": 1 + (step % 30) / 10,
                 "learning_rate": 2e-5 * (1 - step / 200), "loss": 3 * math.exp(-step / 80),
                 "step": step}
        if step == 70:
            entry["loss"] = float("nan")
        if step == 120:
            entry["grad_norm"] = float("inf")
        log.append(entry)
        if step % 50 == 0:
            log.append({"epoch": step / 100, "eval_exact_match": 30 + step / 5,
                        "eval_f1": 40 + step / 5, "eval_runtime": 1.25,
                        "eval_samples_per_second": 80.0, "eval_steps_per_second": 2.5,
                        "step": step})
    # (An epoch beyond the last logging entry's: the subtitle takes it.)
    log.append({"epoch": 2.5, "step": 200, "total_flos": 1e12, "train_loss": 1.0,
                "train_runtime": 3.5})
    return log


def write_state(folder, log_history, **extra):
    state = {"best_metric": None, "epoch": 2.0, "global_step": 200, "log_history": log_history}
    state.update(extra)
    with open(os.path.join(folder, "trainer_state.json"), "w") as f:
        # Python's json writes NaN and Infinity, as the Trainer's file holds them.
        json.dump(state, f, indent=2)


def read(path, mode="rb"):
    with open(path, mode) as f:
        return f.read()


def run(*args):
    return subprocess.run([PLOT] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)


def polylines(root):
    return {p.get("data-series"): [tuple(map(float, xy.split(",")))
                                   for xy in p.get("points").split()]
            for p in root.iter(SVG + "polyline")}


class PlotTest(unittest.TestCase):
    def setUp(self):
        self.assertTrue(os.access(PLOT, os.X_OK), "%s is not built (make all)" % PLOT)
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def draw(self, *extra):
        r = run(*(list(extra) + [self.dir]))
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def test_curves(self):
        log = make_history()
        write_state(self.dir, log)
        r = self.draw()
        path = os.path.join(self.dir, "training_curves.svg")
        self.assertIn("wrote %s: 5 series from %d log entries, 2 non-finite values skipped"
                      % (path, len(log)), r.stdout)
        root = ET.parse(path).getroot()
        self.assertEqual(root.tag, SVG + "svg")
        width, height = float(root.get("width")), float(root.get("height"))
        self.assertGreater(width, 0)
        self.assertGreater(height, 0)
        self.assertEqual([float(v) for v in root.get("viewBox").split()], [0, 0, width, height])

        # One curve per series, training first, then the eval metrics but not
        # their timings; as many points as finite values were logged.
        lines = polylines(root)
        self.assertEqual(list(lines), ["loss", "learning_rate", "grad_norm", "eval_exact_match",
                                       "eval_f1"])
        for name, points in lines.items():
            finite = [e for e in log if name in e and math.isfinite(e[name])]
            self.assertEqual(len(points), len(finite), name)
            self.assertTrue(all(math.isfinite(c) and 0 <= c <= width for c, _ in points))
        self.assertEqual(len(lines["loss"]), 19)
        self.assertEqual(len(lines["eval_f1"]), 4)
        # Steps go right, a falling loss goes down the page (up in SVG y),
        # and the step axis is shared: step 200 is at one x in every panel
        # (within each panel's own offset).
        xs = [x for x, _ in lines["loss"]]
        self.assertEqual(xs, sorted(xs))
        ys = [y for _, y in lines["loss"]]
        self.assertEqual(ys, sorted(ys))
        self.assertAlmostEqual(lines["loss"][-1][0], lines["eval_f1"][-1][0], places=2)

        subtitle = [t for t in root.iter(SVG + "text") if t.get("class") == "subtitle"][0]
        self.assertEqual(subtitle.text, "%d log entries, steps 10 to 200, up to epoch 2.5"
                         % len(log))

        # The skipped values are said so: in the document's title, in the
        # legend, and marked at their steps in their panels.
        title = root.find(SVG + "title").text
        self.assertIn("2 non-finite values (NaN or Infinity) skipped: loss 1, grad_norm 1", title)
        legend = [t for t in root.iter(SVG + "text") if t.get("class") == "legend"][0]
        self.assertIn("loss 1, grad_norm 1", legend.text)
        panels = {g.get("data-series"): g for g in root.iter(SVG + "g")
                  if g.get("class") == "panel"}
        self.assertEqual(list(panels), list(lines))
        for name, step in (("loss", 70), ("grad_norm", 120)):
            marks = [g for g in panels[name].iter(SVG + "g") if g.get("class") == "skipped"]
            self.assertEqual(len(marks), 1, name)
            tips = [line.find(SVG + "title").text for line in marks[0]]
            self.assertEqual(len(tips), 1)
            self.assertIn("step %d " % step, tips[0])
        heading = "".join(panels["loss"].find(SVG + "text").itertext())
        self.assertIn("1 non-finite skipped", heading)
        self.assertNotIn("skipped", "".join(panels["eval_f1"].find(SVG + "text").itertext()))

        # Axes: each panel has labelled ticks on both axes.
        for name, g in panels.items():
            labels = {t.get("class"): [x.text for x in t] for t in g.iter(SVG + "g")
                      if t.get("class") in ("x-labels", "y-labels")}
            self.assertGreaterEqual(len(labels["x-labels"]), 3, name)
            self.assertGreaterEqual(len(labels["y-labels"]), 3, name)
            self.assertEqual(len(set(labels["y-labels"])), len(labels["y-labels"]), name)
            self.assertIn("200", labels["x-labels"], name)

        # Self-contained: no script, no link, no external font or image.
        text = read(path).decode("utf-8")
        for banned in ("<script", "href", "@import", "url(", "<image", "<foreignObject"):
            self.assertNotIn(banned, text)

    def test_output_option_and_replacement(self):
        write_state(self.dir, make_history())
        target = os.path.join(self.dir, "other.svg")
        with open(target, "w") as f:
            f.write("old")
        self.draw("-o", target)
        self.assertEqual(polylines(ET.parse(target).getroot())["eval_f1"][0][0] > 0, True)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "training_curves.svg")))
        self.assertEqual(sorted(os.listdir(self.dir)), ["other.svg", "trainer_state.json"])
        # As readable as any new file (not mkstemp's 0600).
        umask = os.umask(0)
        os.umask(umask)
        self.assertEqual(os.stat(target).st_mode & 0o777, 0o666 & ~umask)

    def test_hostile_names_are_escaped(self):
        name = "eval_<b>&\"'\u0001\ufffe\u00e9"
        write_state(self.dir, [{"step": 1, name: 0.5}, {"step": 2, name: 0.75}])
        self.draw()
        root = ET.parse(os.path.join(self.dir, "training_curves.svg")).getroot()
        # Characters XML cannot hold become U+FFFD; the rest comes back as is.
        self.assertEqual(list(polylines(root)), ["eval_<b>&\"'\ufffd\ufffd\u00e9"])

    def test_key_holding_nul(self):
        # A \u0000 in a key is drawn as U+FFFD, the key kept apart from its
        # prefix (eval_f1) and from a training key it starts with (loss).
        write_state(self.dir, [{"step": 1, "eval_f1\u0000x": 5.0, "eval_f1": 7.0},
                               {"step": 2, "eval_f1\u0000x": 6.0, "eval_f1\u0000x": 6.5},
                               {"loss\u0000": "not drawn, and not read as loss"}])
        self.draw()
        root = ET.parse(os.path.join(self.dir, "training_curves.svg")).getroot()
        lines = polylines(root)
        self.assertEqual(list(lines), ["eval_f1\ufffdx", "eval_f1"])
        self.assertEqual(len(lines["eval_f1\ufffdx"]), 2)
        self.assertEqual(len(lines["eval_f1"]), 1)

    def test_single_point_and_flat_series(self):
        write_state(self.dir, [{"step": 5, "loss": 2.0, "learning_rate": 0.0}])
        self.draw()
        root = ET.parse(os.path.join(self.dir, "training_curves.svg")).getroot()
        lines = polylines(root)
        self.assertEqual({k: len(v) for k, v in lines.items()}, {"loss": 1, "learning_rate": 1})
        self.assertEqual(len(list(root.iter(SVG + "circle"))), 2)

    def test_all_values_non_finite(self):
        write_state(self.dir, [{"step": 1, "loss": float("nan")},
                               {"step": 2, "loss": float("-inf")}])
        r = self.draw()
        self.assertIn("2 NaN or Infinity values left out", r.stderr)
        root = ET.parse(os.path.join(self.dir, "training_curves.svg")).getroot()
        self.assertEqual(polylines(root), {})
        texts = ["".join(t.itertext()) for t in root.iter(SVG + "text")]
        self.assertIn("no finite value to draw", texts)

    def assert_refused(self, args, *needles, status=1):
        before = sorted(os.listdir(self.dir))
        r = run(*args)
        self.assertEqual(r.returncode, status, r.stdout + r.stderr)
        self.assertEqual(r.stdout, "")
        for needle in needles:
            self.assertIn(needle, r.stderr)
        # Nothing written: no picture, no temporary file left over.
        self.assertEqual(sorted(os.listdir(self.dir)), before)
        return r

    def write_text(self, text):
        with open(os.path.join(self.dir, "trainer_state.json"), "w") as f:
            f.write(text)

    def test_missing_file(self):
        state = os.path.join(self.dir, "trainer_state.json")
        self.assert_refused([self.dir], "cputrain-plot: " + state +
                            ": cannot open: No such file or directory\n")
        os.mkdir(state)
        self.assert_refused([self.dir], "cputrain-plot: " + state +
                            ": is a directory, not a regular file\n")

    def test_malformed_json(self):
        # The library's reader (the one that reads this file on resume)
        # names the file and the place; columns count characters.
        state = os.path.join(self.dir, "trainer_state.json")
        self.write_text('{"log_history": [\n  {"loss": 1.5, "step": 1},\n'
                        '  {"loss": 1.0 "step": 2}\n]}')
        r = self.assert_refused([self.dir], "cputrain-plot: malformed JSON: " + state +
                                ": line 3 column 16: expected ',' or '}' after object member\n")
        self.assertEqual(r.stderr.count("\n"), 1)
        for text, needle in (('{"log_history": [',
                              "line 1 column 18: unexpected end of input: expected a value"),
                             ('{"log_history": [1', "line 1 column 19: unexpected end of input: "
                              "expected ',' or ']' after array element"),
                             ('{"log_history": []} []',
                              "line 1 column 21: unexpected data after the JSON value"),
                             ('{"log_history": [{"loss": 01}]}',
                              "line 1 column 27: leading zeros are not allowed in numbers"),
                             ('{"log_history": "\xff"}',
                              "line 1 column 18: invalid UTF-8: byte that never occurs in UTF-8"),
                             ("[" * 100000, "line 1 column 513: nesting deeper than 512 levels"),
                             ('{"log_history": [{"loss": nan, "step": 1}]}',
                              "line 1 column 27: invalid literal (expected 'null')"),
                             ("", "line 1 column 1: unexpected end of input: expected a value")):
            with open(state, "wb") as f:
                f.write(text.encode("latin-1"))
            self.assert_refused([self.dir], "cputrain-plot: malformed JSON: %s: %s\n"
                                % (state, needle))

    def test_a_failure_keeps_the_previous_picture(self):
        write_state(self.dir, make_history())
        self.draw()
        path = os.path.join(self.dir, "training_curves.svg")
        good = read(path)
        self.write_text('{"log_history": [{"loss": 1, "step": 1}, ')
        self.assert_refused([self.dir], "malformed JSON")
        self.assertEqual(read(path), good)

    def test_bad_log_history(self):
        cases = [({"global_step": 3}, "log_history: missing"),
                 ({"log_history": []}, "log_history: empty, nothing to plot"),
                 ({"log_history": {}}, "log_history: expected an array, found an object"),
                 ({"log_history": [{"loss": 1, "step": 1}, 7]},
                  "log_history[1]: expected an object, found a number"),
                 ({"log_history": [{"loss": 1, "step": 1}, {"loss": "1.2", "step": 2}]},
                  "log_history[1].loss: expected a number, found a string"),
                 ({"log_history": [{"eval_f1": None, "step": 1}]},
                  "log_history[0].eval_f1: expected a number, found null"),
                 ({"log_history": [{"loss": 1}]}, "log_history[0].step: missing"),
                 ({"log_history": [{"loss": 1, "step": "1"}]},
                  "log_history[0].step: expected a number, found a string"),
                 ({"log_history": [{"loss": 1, "step": float("nan")}]},
                  "log_history[0].step: not a finite number"),
                 ({"log_history": [{"loss": 1, "step": 1, "epoch": True}]},
                  "log_history[0].epoch: expected a number, found a boolean"),
                 ({"log_history": [{"train_loss": 1.0, "step": 4, "eval_runtime": 2.0}]},
                  "log_history: none of its 1 entry holds loss, learning_rate, grad_norm or an "
                  "eval_* metric")]
        for state, needle in cases:
            with open(os.path.join(self.dir, "trainer_state.json"), "w") as f:
                json.dump(state, f)
            with self.subTest(needle=needle):
                self.assert_refused([self.dir], "trainer_state.json: " + needle)
        with open(os.path.join(self.dir, "trainer_state.json"), "w") as f:
            f.write("[1, 2]")
        self.assert_refused([self.dir], "expected a JSON object at the top, found an array")

    def test_unwritable_output(self):
        write_state(self.dir, make_history())
        missing = os.path.join(self.dir, "no-such-folder", "x.svg")
        self.assert_refused(["-o", missing, self.dir], missing + ": cannot create a file beside it")

    def test_usage(self):
        r = run("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("usage: cputrain-plot [-o FILE] OUTPUT_DIR", r.stdout)
        self.assertIn("-o FILE", r.stdout)
        for args, needle in (([], "which OUTPUT_DIR?"), (["-x", self.dir], "unknown option -x"),
                             (["-o"], "-o needs a file name"),
                             ([self.dir, self.dir], "one OUTPUT_DIR only"),
                             (["-o", "a", "-o", "b", self.dir], "-o given twice"),
                             ([""], "OUTPUT_DIR is empty")):
            r = self.assert_refused(args, needle, status=2)
            self.assertIn("--help shows the usage", r.stderr)


if __name__ == "__main__":
    unittest.main()
