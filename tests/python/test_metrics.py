"""cputrain.metrics (ct_metric_*, ct_seqeval_*) against their references:
scikit-learn and SciPy from Debian for the classification and regression
scores, tests/python/seqeval_ref.py for seqeval's entity rules, on random
inputs and on the edge cases each definition has."""

import math
import random
import unittest
import warnings

from cputrain import CputrainError, Status, metrics

import seqeval_ref

try:
    import numpy as np
    import scipy.stats
    import sklearn.metrics
except ImportError:
    sklearn = None

needs_sklearn = unittest.skipIf(sklearn is None, "python3-sklearn / python3-scipy missing")


@needs_sklearn
class ClassificationTest(unittest.TestCase):
    def setUp(self):
        warnings.simplefilter("ignore")  # sklearn's UndefinedMetricWarning on empty classes

    def tearDown(self):
        warnings.resetwarnings()

    def test_random_inputs_agree_with_sklearn(self):
        rng = np.random.default_rng(1)
        for trial in range(300):
            k = int(rng.integers(2, 6))
            n = int(rng.integers(1, 40))
            # Some trials draw from fewer classes than k, so classes go missing.
            ref = rng.integers(0, int(rng.integers(1, k + 1)), n)
            pred = np.where(rng.random(n) < 0.5, ref, rng.integers(0, k, n))
            with self.subTest(trial=trial, k=k, n=n):
                self.assertAlmostEqual(metrics.accuracy(pred, ref),
                                       sklearn.metrics.accuracy_score(ref, pred), delta=1e-15)
                for average in ("micro", "macro", "weighted"):
                    self.assertAlmostEqual(
                        metrics.f1(pred, ref, average=average, num_labels=k),
                        sklearn.metrics.f1_score(ref, pred, average=average), delta=1e-12,
                        msg=average)
                self.assertAlmostEqual(metrics.matthews_corrcoef(pred, ref, num_labels=k),
                                       sklearn.metrics.matthews_corrcoef(ref, pred),
                                       delta=1e-12)
                if k == 2:
                    self.assertAlmostEqual(metrics.f1(pred, ref),
                                           sklearn.metrics.f1_score(ref, pred), delta=1e-12)

    def test_edge_cases_agree_with_sklearn(self):
        cases = [([0, 0, 0], [0, 0, 0]),  # no positive anywhere: F1 0, MCC 0
                 ([1, 1, 1], [1, 1, 1]),  # one class only: MCC undefined, 0
                 ([1, 0, 1], [0, 1, 0]),  # all wrong: MCC -1
                 ([0, 1], [0, 1]),
                 ([1], [0])]
        for pred, ref in cases:
            with self.subTest(pred=pred, ref=ref):
                self.assertEqual(metrics.f1(pred, ref), sklearn.metrics.f1_score(ref, pred))
                self.assertEqual(metrics.matthews_corrcoef(pred, ref, num_labels=2),
                                 sklearn.metrics.matthews_corrcoef(ref, pred))

    def test_multi_label_micro_f1_is_binary_f1_of_the_flattened_matrix(self):
        rng = np.random.default_rng(2)
        for trial in range(50):
            ref = (rng.random((int(rng.integers(1, 20)), 4)) < 0.3).astype(np.int32)
            pred = np.where(rng.random(ref.shape) < 0.7, ref, 1 - ref)
            self.assertAlmostEqual(metrics.f1(pred, ref),
                                   sklearn.metrics.f1_score(ref, pred, average="micro"),
                                   delta=1e-12)


@needs_sklearn
class CorrelationTest(unittest.TestCase):
    def setUp(self):
        warnings.simplefilter("ignore")  # SciPy's ConstantInputWarning

    def tearDown(self):
        warnings.resetwarnings()

    def check(self, x, y, delta=1e-12):
        for ours, theirs in ((metrics.pearsonr, scipy.stats.pearsonr),
                             (metrics.spearmanr, scipy.stats.spearmanr)):
            got, want = ours(x, y), theirs(x, y)[0]
            if math.isnan(want):  # a constant side
                self.assertTrue(math.isnan(got), (ours.__name__, x, y, got))
            else:
                self.assertAlmostEqual(got, want, delta=delta, msg=ours.__name__)

    def test_random_inputs_agree_with_scipy(self):
        rng = np.random.default_rng(3)
        for trial in range(200):
            n = int(rng.integers(2, 50))
            x = rng.normal(size=n)
            y = 0.5 * x + rng.normal(size=n) * rng.random()
            with self.subTest(trial=trial, n=n):
                self.check(x, y)
                # STS-B's labels: a 0..5 scale in steps of 0.2, ties everywhere.
                self.check(np.round(rng.random(n) * 25) / 5, np.round(x * 2) / 2)

    def test_large_offsets_do_not_lose_the_signal(self):
        rng = np.random.default_rng(4)
        x = 1e8 + rng.normal(size=100)
        self.check(x, x * 3 + rng.normal(size=100), delta=1e-9)

    def test_constant_input_is_nan_as_in_scipy(self):
        self.assertTrue(math.isnan(metrics.pearsonr([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])))
        self.assertTrue(math.isnan(metrics.spearmanr([1.0, 2.0, 3.0], [4.0, 4.0, 4.0])))
        self.assertTrue(math.isnan(scipy.stats.pearsonr([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])[0]))

    def test_perfect_and_inverse_rankings(self):
        self.assertEqual(metrics.spearmanr([1, 5, 9, 100], [2, 3, 4, 5]), 1.0)
        self.assertEqual(metrics.spearmanr([1, 5, 9, 100], [5, 4, 3, 2]), -1.0)
        self.assertEqual(metrics.pearsonr([1, 2], [7, 3]), -1.0)


class RefusalTest(unittest.TestCase):
    def assertRefused(self, call, *needles):
        with self.assertRaises(CputrainError) as cm:
            call()
        self.assertEqual(cm.exception.status, Status.ERR_INVALID_ARG)
        for needle in needles:
            self.assertIn(needle, str(cm.exception))

    def test_bad_inputs_are_refused_naming_what(self):
        self.assertRefused(lambda: metrics.accuracy([], []), "no examples")
        self.assertRefused(lambda: metrics.f1([0, 1, 2], [0, 1, 1], num_labels=3),
                           "binary F1 needs num_labels 2")
        self.assertRefused(lambda: metrics.f1([0, 1, 5], [0, 1, 1], "macro", num_labels=3),
                           "predictions[2] = 5", "[0, 3)")
        self.assertRefused(lambda: metrics.matthews_corrcoef([0, 1], [0, -1], num_labels=2),
                           "references[1] = -1")
        self.assertRefused(lambda: metrics.pearsonr([1.0], [2.0]), "needs 2 or more")
        self.assertRefused(lambda: metrics.spearmanr([1.0, float("nan")], [2.0, 3.0]),
                           "x[1]", "not finite")
        with self.assertRaises(ValueError):
            metrics.accuracy([0, 1], [0])


def random_sentences(rng, strict, count):
    kinds = ["PER", "LOC", "MISC"]
    prefixes = "BI" if strict else "BIES"
    tags = ["O"] + ["%s-%s" % (p, k) for k in kinds for p in prefixes]
    out = []
    for _ in range(count):
        n = rng.randrange(0, 12)
        out.append([tags[0] if rng.random() < 0.4 else rng.choice(tags) for _ in range(n)])
    return tags, out


def noisy_copy(rng, tags, sentences):
    return [[t if rng.random() < 0.7 else rng.choice(tags) for t in s] for s in sentences]


class SeqevalTest(unittest.TestCase):
    def assertScores(self, got, want):
        self.assertEqual(list(got), list(want))
        for key, value in want.items():
            if isinstance(value, dict):
                for field, v in value.items():
                    self.assertAlmostEqual(got[key][field], v, delta=1e-15, msg=(key, field))
            else:
                self.assertAlmostEqual(got[key], value, delta=1e-15, msg=key)

    def test_random_sentences_agree_with_the_reference(self):
        rng = random.Random(5)
        for strict in (False, True):
            for trial in range(150):
                tags, refs = random_sentences(rng, strict, rng.randrange(1, 6))
                if not any(refs):
                    refs.append(["O"])
                preds = noisy_copy(rng, tags, refs)
                with self.subTest(strict=strict, trial=trial, refs=refs, preds=preds):
                    self.assertScores(metrics.seqeval(preds, refs, "strict" if strict else
                                                      "default"),
                                      seqeval_ref.scores(refs, preds, strict))

    def test_the_iob_edge_cases(self):
        # (references, predictions, default-mode overall F1, strict-IOB2 F1)
        cases = [
            # I- without B- is an entity by default, none in strict IOB2.
            ([["I-PER", "I-PER", "O"]], [["B-PER", "I-PER", "O"]], 1.0, 0.0),
            # A type change inside a span: two entities.
            ([["B-PER", "I-LOC"]], [["B-PER", "B-LOC"]], 1.0, 2 / 3),
            # Single-token entities, back to back.
            ([["B-PER", "B-PER", "O", "B-LOC"]], [["B-PER", "B-PER", "O", "B-LOC"]], 1.0, 1.0),
            # A span cut short is wrong as a whole.
            ([["B-PER", "I-PER", "I-PER"]], [["B-PER", "I-PER", "O"]], 0.0, 0.0),
        ]
        for refs, preds, f1_default, f1_strict in cases:
            with self.subTest(refs=refs, preds=preds):
                got = metrics.seqeval(preds, refs)
                self.assertScores(got, seqeval_ref.scores(refs, preds))
                self.assertAlmostEqual(got["overall_f1"], f1_default, delta=1e-15)
                strict = metrics.seqeval(preds, refs, "strict")
                self.assertScores(strict, seqeval_ref.scores(refs, preds, True))
                self.assertAlmostEqual(strict["overall_f1"], f1_strict, delta=1e-15)

    def test_labels_of_minus_100_are_dropped_as_run_ner_drops_them(self):
        tags = ["O", "B-PER", "I-PER"]
        with metrics.Seqeval(tags) as s:
            # The sub-token between B and I is -100: the entity is still whole.
            s.add([1, 0, 2, 0], [1, -100, 2, 0])
            self.assertEqual(s.compute()["overall_f1"], 1.0)
            self.assertEqual(s.compute()["overall_accuracy"], 1.0)
            self.assertEqual(s.compute()["PER"]["number"], 1)

    def test_entities_never_cross_sentences(self):
        with metrics.Seqeval(["O", "B-PER", "I-PER"]) as s:
            s.add([1], [1])
            s.add([2], [2])  # I- opening a new sentence starts its own entity
            self.assertEqual(s.compute()["PER"]["number"], 2)

    def test_any_tags_read_as_seqeval_reads_them(self):
        # POS tags (run_ner.py --task_name pos), BILOU's U-, conlleval's ".":
        # the default mode reads the first character as the prefix, as
        # seqeval does after its warning, and "." never splits on a type
        rng = random.Random(7)
        tags = ["O", "NN", "NNP", "DT", ".", ",", "U-PER", "B-PER", "I-PER", "VB-X", "E"]
        for trial in range(150):
            refs = [[rng.choice(tags) for _ in range(rng.randrange(0, 10))]
                    for _ in range(rng.randrange(1, 5))]
            if not any(refs):
                refs.append(["NN"])
            preds = noisy_copy(rng, tags, refs)
            with self.subTest(trial=trial, refs=refs, preds=preds):
                self.assertScores(metrics.seqeval(preds, refs), seqeval_ref.scores(refs, preds))
        # a "." ends no chunk by its type: the span from "E" runs on past it
        got = metrics.seqeval([["I-PER", ".", ".", "E", "VB-X"]], [["I-PER", ".", ".", "E", "VB-X"]])
        self.assertEqual({k: v["number"] for k, v in got.items() if isinstance(v, dict)},
                         {"PER": 1, "_": 1, "X": 1})

    def test_bad_tags_and_ids_are_refused(self):
        with self.assertRaises(CputrainError) as cm:
            metrics.Seqeval(["O", "B-PER", "E-PER"], "strict")
        self.assertIn('tag 2 "E-PER"', str(cm.exception))
        with self.assertRaises(CputrainError):
            metrics.Seqeval(["O", ""])
        with metrics.Seqeval(["O", "B-PER"]) as s:
            with self.assertRaises(CputrainError) as cm:
                s.add([0, 2], [0, 1])
            self.assertIn("predictions[1] = 2", str(cm.exception))
            with self.assertRaises(CputrainError) as cm:
                s.compute()  # nothing was added by the refused call
            self.assertIn("no tokens", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
