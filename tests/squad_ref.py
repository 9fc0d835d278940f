#!/usr/bin/env python3
"""Reference values for tests/check_squad.c, computed with Python's own string
semantics and numpy (no other package), and the Unicode table of
lib/data/squad_metric.c.

  squad_ref.py word-table   the Unicode tables squad_metric.c embeds (\\w,
                            Cased, Case_Ignorable), as C source
  squad_ref.py metric       EM / F1 of the metric cases in check_squad.c
  squad_ref.py post         tests/data/squad_post_cases.json: hand-built
                            features and the files utils_qa.py's rules
                            write for them (numpy float32)

The scoring and post-processing below are written from the rules of the
SQuAD scripts and of utils_qa.py; check_squad.c holds the metric values
printed by `metric` and reads the post-processing fixture."""

import collections
import json
import re
import string
import sys

# ---- SQuAD normalisation and scores --------------------------------------------------


def normalize(s):
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def tokens(s):
    return normalize(s).split()


def f1_v1(pred, truth):
    p, t = tokens(pred), tokens(truth)
    same = sum((collections.Counter(p) & collections.Counter(t)).values())
    if same == 0:
        return 0
    precision = 1.0 * same / len(p)
    recall = 1.0 * same / len(t)
    return (2 * precision * recall) / (precision + recall)


def f1_v2(truth, pred):
    t = tokens(truth) if truth else []
    p = tokens(pred) if pred else []
    same = sum((collections.Counter(t) & collections.Counter(p)).values())
    if not t or not p:
        return int(t == p)
    if same == 0:
        return 0
    precision = 1.0 * same / len(p)
    recall = 1.0 * same / len(t)
    return (2 * precision * recall) / (precision + recall)


def score_v1(preds, refs):
    em = f1 = 0
    for p, truths in zip(preds, refs):
        if p is None:
            continue
        em += max(normalize(p) == normalize(t) for t in truths)
        f1 += max(f1_v1(p, t) for t in truths)
    return {"exact_match": 100.0 * em / len(preds), "f1": 100.0 * f1 / len(preds)}


def score_v2(preds, refs, na_probs=None, thresh=1.0):
    n = len(preds)
    na = na_probs or [0.0] * n
    has = [bool(r) for r in refs]
    ex_raw, f1_raw = [], []
    for p, truths in zip(preds, refs):
        gold = [t for t in truths if normalize(t)] or [""]
        ex_raw.append(max(int(normalize(t) == normalize(p)) for t in gold))
        f1_raw.append(max(f1_v2(t, p) for t in gold))

    def thr(raw):
        return [float(not has[i]) if na[i] > thresh else raw[i] for i in range(n)]

    ex_t, f1_t = thr(ex_raw), thr(f1_raw)

    def block(idx):
        return [100.0 * sum(ex_t[i] for i in idx) / len(idx),
                100.0 * sum(f1_t[i] for i in idx) / len(idx), len(idx)]

    out = collections.OrderedDict(zip(["exact", "f1", "total"], block(range(n))))
    for name, idx in (("HasAns", [i for i in range(n) if has[i]]),
                      ("NoAns", [i for i in range(n) if not has[i]])):
        if idx:
            for k, v in zip(["exact", "f1", "total"], block(idx)):
                out[name + "_" + k] = v

    def best(raw):
        cur = best_score = sum(1 for h in has if not h)
        best_t = 0.0
        for i in sorted(range(n), key=lambda i: na[i]):
            cur += raw[i] if has[i] else (-1 if preds[i] else 0)
            if cur > best_score:
                best_score, best_t = cur, na[i]
        return 100.0 * best_score / n, best_t

    out["best_exact"], out["best_exact_thresh"] = best(ex_raw)
    out["best_f1"], out["best_f1_thresh"] = best(f1_raw)
    return out


# The metric cases of check_squad.c: (prediction, [references]).
NORMALIZE_CASES = [
    "The Cat",
    "  a  cat,\tthe   dog!  ",
    "An apple; an Answer",
    "the-end",
    "theatre a.b",
    "Über naïve Café",
    "«the» €the",
    "ΟΔΟΣ",
    "a\u0301",
    "İstanbul",
    "the\u00a0cat\u3000a\u2003b",
    "",
    "...",
    "A an THE",
    "x_the_y",
    "2the the2 the",
    "\u24b6\u03a3 \u4e2d\u03a3 \u00b2\u03a3",
]

PAIR_CASES = [
    ("the cat", "The Cat!"),
    ("cat", "a cat sat"),
    ("a cat sat on the mat", "cat mat"),
    ("cat cat dog", "cat dog dog"),
    ("", "anything"),
    ("", ""),
    ("the", "a"),
    ("Denver Broncos", "Denver Broncos"),
    ("1976", "in 1976"),
]

V1_PREDS = ["Denver Broncos", "the Carolina Panthers", "gold", None, "Levi's Stadium, CA"]
V1_REFS = [["Denver Broncos", "Denver Broncos", "Denver"],
           ["Carolina Panthers", "Panthers"],
           ["golden", "gold coloured"],
           ["Santa Clara"],
           ["Levi's Stadium", "Levi's Stadium in the San Francisco Bay Area at Santa Clara, California."]]

V2_PREDS = ["Denver Broncos", "", "Panthers win", "Santa Clara", "the"]
V2_REFS = [["Denver Broncos"], [], ["Carolina Panthers"], ["Santa Clara"], []]
V2_NA = [0.1, 0.9, 0.2, 0.8, 0.5]


def _ranges(pred, first=0x80):
    out, start = [], None
    for cp in range(first, 0x110001):
        hit = cp <= 0x10FFFF and not 0xD800 <= cp <= 0xDFFF and pred(chr(cp))
        if hit and start is None:
            start = cp
        elif not hit and start is not None:
            out.append((start, cp - 1))
            start = None
    return out


def _sigma_final_after(c):
    # str.lower() of c + "Σ" ends in "ς" only when c is cased and not
    # case-ignorable (Python skips case-ignorables first).
    return (c + "\u03a3").lower()[-1] == "\u03c2"


def _print_table(name, ranges):
    print("static const uint32_t %s[][2] = {" % name)
    line = "   "
    for a, b in ranges:
        item = " {0x%X, 0x%X}," % (a, b)
        if len(line) + len(item) > 96:
            print(line)
            line = "   "
        line += item
    print(line)
    print("};")


def word_table():
    """The three tables of squad_metric.c, as C source."""
    import unicodedata
    print("/* GENERATED by `python3 tests/squad_ref.py word-table` (Python %s, Unicode %s):"
          % (sys.version.split()[0], unicodedata.unidata_version))
    print(" * [first, last] code point ranges. word: what Python's re takes as \\w above")
    print(" * ASCII (str.isalnum() or \"_\"). cased / ignorable: Unicode's Cased and")
    print(" * Case_Ignorable as str.lower() applies them to a capital sigma (a character")
    print(" * both cased and case-ignorable counts as case-ignorable, as there). */")
    _print_table("word_ranges", _ranges(lambda c: c.isalnum() or c == "_"))
    _print_table("cased_ranges", _ranges(_sigma_final_after, 0))
    _print_table("ignorable_ranges", _ranges(
        lambda c: not _sigma_final_after(c) and ("A" + c + "\u03a3").lower()[-1] == "\u03c2",
        0))


def show_metric():
    for s in NORMALIZE_CASES:
        print("normalize %r -> %r" % (s, normalize(s)))
    for p, t in PAIR_CASES:
        print("pair %r %r: v1 em %d f1 %r | v2 em %d f1 %r" % (
            p, t, normalize(p) == normalize(t), f1_v1(p, t),
            int(normalize(t) == normalize(p)), f1_v2(t, p)))
    print("v1", json.dumps(score_v1(V1_PREDS, V1_REFS)))
    print("v2", json.dumps(score_v2(V2_PREDS, V2_REFS)))
    print("v2 na", json.dumps(score_v2(V2_PREDS, V2_REFS, V2_NA, 0.5)))


# ---- post-processing -----------------------------------------------------------------


def postprocess(examples, features, start_logits, end_logits, v2, n_best=20, max_len=30,
                thresh=0.0):
    """examples: [(id, context)]; features: [(example index, offsets)], offsets a
    list of (start, end) or None; logits: float32 arrays per feature. Mirrors the
    rules of utils_qa.postprocess_qa_predictions."""
    import numpy as np
    per_example = collections.defaultdict(list)
    for f, (ei, _) in enumerate(features):
        per_example[ei].append(f)
    preds, nbest, odds = collections.OrderedDict(), collections.OrderedDict(), {}
    null_score = None
    for ei, (qid, context) in enumerate(examples):
        min_null, prelim = None, []
        for f in per_example[ei]:
            sl, el = start_logits[f], end_logits[f]
            offs = features[f][1]
            fnull = sl[0] + el[0]
            if min_null is None or min_null["score"] > fnull:
                min_null = {"offsets": (0, 0), "score": fnull, "start_logit": sl[0],
                            "end_logit": el[0]}
            # A stable ascending argsort reversed: on ties the later index first.
            starts = np.argsort(sl, kind="stable")[-1:-n_best - 1:-1].tolist()
            ends = np.argsort(el, kind="stable")[-1:-n_best - 1:-1].tolist()
            for s in starts:
                for e in ends:
                    if s >= len(offs) or e >= len(offs) or offs[s] is None or offs[e] is None:
                        continue
                    if e < s or e - s + 1 > max_len:
                        continue
                    prelim.append({"offsets": (offs[s][0], offs[e][1]), "score": sl[s] + el[e],
                                   "start_logit": sl[s], "end_logit": el[e]})
        if v2 and min_null is not None:
            prelim.append(min_null)
            null_score = min_null["score"]
        best = sorted(prelim, key=lambda x: x["score"], reverse=True)[:n_best]
        if v2 and min_null is not None and not any(p["offsets"] == (0, 0) for p in best):
            best.append(min_null)
        for p in best:
            o = p.pop("offsets")
            p["text"] = context[o[0]:o[1]]
        if not best or (len(best) == 1 and best[0]["text"] == ""):
            best.insert(0, {"text": "empty", "start_logit": 0.0, "end_logit": 0.0, "score": 0.0})
        scores = np.array([p.pop("score") for p in best])
        e = np.exp(scores - np.max(scores))
        probs = e / e.sum()
        for pr, p in zip(probs, best):
            p["probability"] = pr
        if not v2:
            preds[qid] = best[0]["text"]
        else:
            i = 0
            while best[i]["text"] == "":
                i += 1
            diff = null_score - best[i]["start_logit"] - best[i]["end_logit"]
            odds[qid] = float(diff)
            # NumPy 2 compares a float32 with a Python float in float32.
            preds[qid] = "" if np.float32(diff) > np.float32(thresh) else best[i]["text"]
        nbest[qid] = [{k: (float(v) if isinstance(v, (np.float32, np.float64)) else v)
                       for k, v in p.items()} for p in best]
    return preds, nbest, odds


def post_cases():
    """The post-processing cases of check_squad.c: (name, examples, features,
    start logits, end logits, settings). Offsets None mark tokens outside the
    context; logits are float32 as Trainer hands them over."""
    import numpy as np

    def f32(*v):
        return np.array(v, np.float32)

    cases = []
    # One feature: [CLS] q q [SEP] Paris is in France [SEP].
    ctx = "Paris is in France"
    offs = [None, None, None, None, (0, 5), (6, 8), (9, 11), (12, 18), None]
    sl = f32(0.5, 2.0, 1.0, 0.0, 1.5, 0.2, 0.1, 3.0, 0.0)
    el = f32(0.4, 0.0, 2.5, 0.0, 2.0, 0.3, 0.2, 2.75, 0.0)
    for v2 in (False, True):
        cases.append(("simple", [("q1", ctx)], [(0, offs)], [sl], [el], dict(v2=v2)))
    cases.append(("simple", [("q1", ctx)], [(0, offs)], [sl], [el], dict(v2=True, max_len=2)))

    # An answer split across two windows that overlap (stride), the best
    # span in the second window and reaching the very end of the context.
    ctx = "aa bb cc dd ee"
    offs0 = [None, None, (0, 2), (3, 5), (6, 8), None]
    offs1 = [None, None, (6, 8), (9, 11), (12, 14), None]
    sl0, el0 = f32(1.0, 0.0, 0.5, 1.25, 2.0, 0.0), f32(1.0, 0.0, 0.0, 0.5, 1.0, 0.0)
    sl1, el1 = f32(0.25, 0.0, 1.5, 0.5, 0.75, 0.0), f32(0.5, 0.0, 0.0, 1.0, 3.5, 0.0)
    for v2 in (False, True):
        cases.append(("windows", [("w", ctx)], [(0, offs0), (0, offs1)], [sl0, sl1], [el0, el1],
                      dict(v2=v2)))

    # v2: unanswerable (the null wins), answerable, and one the threshold decides.
    ctx = "one two three"
    offs = [None, None, (0, 3), (4, 7), (8, 13), None]
    sls = [f32(5.0, 0.0, 1.0, 0.5, 0.0, 0.0), f32(0.0, 0.0, 1.0, 3.0, 0.5, 0.0),
           f32(2.0, 0.0, 1.0, 0.5, 0.75, 0.0)]
    els = [f32(4.0, 0.0, 1.0, 0.5, 0.0, 0.0), f32(0.0, 0.0, 0.5, 2.0, 1.0, 0.0),
           f32(1.5, 0.0, 2.25, 0.5, 0.0, 0.0)]
    ex = [("na", ctx), ("ok", ctx), ("edge", ctx)]
    feats = [(0, offs), (1, offs), (2, offs)]
    for thresh in (0.0, -6.0, 1.0):
        cases.append(("null", ex, feats, sls, els, dict(v2=True, thresh=thresh)))
    cases.append(("null", ex, feats, sls, els, dict(v2=False)))

    # Spans longer than max_answer_length are skipped.
    ctx = "w0 w1 w2 w3"
    offs = [None, (0, 2), (3, 5), (6, 8), (9, 11), None]
    sl, el = f32(0.0, 4.0, 0.0, 1.0, 0.0, 0.0), f32(0.0, 0.0, 0.5, 0.0, 4.0, 0.0)
    for max_len in (30, 4, 3, 2):
        cases.append(("toolong", [("t", ctx)], [(0, offs)], [sl], [el], dict(max_len=max_len)))

    # Offsets count characters; ids and texts leave as \u escapes.
    ctx = "Zo\u00eb \u2192 \u03a9mega \U0001F600 fin \"q\"\\"
    offs = [None, (0, 3), (4, 5), (6, 11), (12, 13), (14, 17), (18, 21), None]
    sl = f32(0.0, 0.1, 0.0, 2.0, 0.0, 0.0, 0.5, 0.0)
    el = f32(0.0, 0.0, 0.0, 0.0, 1.9, 0.0, 1.0, 0.0)
    for v2 in (False, True):
        cases.append(("unicode", [("u\u00e9\U0001F600", ctx)], [(0, offs)], [sl], [el],
                      dict(v2=v2)))

    # Examples without features (--max_eval_samples cuts them): v1 gets the
    # "empty" stand-in, v2 reuses the previous example's null score.
    ctx = "alpha beta"
    offs = [None, (0, 5), (6, 10), None]
    sl, el = f32(1.0, 2.0, 0.5, 0.0), f32(0.5, 0.0, 1.75, 0.0)
    for v2 in (False, True):
        cases.append(("nofeatures", [("a", ctx), ("b", ctx)], [(0, offs)], [sl], [el],
                      dict(v2=v2)))

    # Nothing but the null answer survives (every token outside the context):
    # the stand-in joins it and the softmax runs in float64.
    offs = [None, None, None, None]
    sl, el = f32(0.5, 1.0, 1.0, 0.0), f32(0.25, 1.0, 1.0, 0.0)
    for v2 in (False, True):
        cases.append(("onlynull", [("o", "unused")], [(0, offs)], [sl], [el], dict(v2=v2)))

    # Equal logits: ranked as a stable argsort reversed (later token first);
    # equal scores keep their insertion order (sorted() is stable).
    ctx = "x y z"
    offs = [None, (0, 1), (2, 3), (4, 5), None]
    sl, el = f32(0.0, 1.0, 1.0, 1.0, 0.0), f32(0.0, 1.0, 1.0, 1.0, 0.0)
    cases.append(("ties", [("t", ctx)], [(0, offs)], [sl], [el], dict(n_best=2)))
    cases.append(("ties", [("t", ctx)], [(0, offs)], [sl], [el], dict(n_best=3, max_len=1)))
    return cases


def post_fixture():
    """tests/data/squad_post_cases.json: inputs and the exact files utils_qa.py's
    rules write, one entry per case."""
    import numpy as np
    out = []
    for name, examples, features, sls, els, opt in post_cases():
        v2 = opt.get("v2", False)
        kw = dict(n_best=opt.get("n_best", 20), max_len=opt.get("max_len", 30),
                  thresh=opt.get("thresh", 0.0))
        preds, nbest, odds = postprocess(examples, features, sls, els, v2, **kw)
        out.append(collections.OrderedDict([
            ("name", name),
            ("version_2_with_negative", v2),
            ("n_best_size", kw["n_best"]),
            ("max_answer_length", kw["max_len"]),
            ("null_score_diff_threshold", kw["thresh"]),
            ("examples", [{"id": i, "context": c} for i, c in examples]),
            ("features", [collections.OrderedDict([
                ("example", e),
                ("offsets", [list(o) if o is not None else [-1, -1] for o in offs]),
                ("start_logits", [float(x) for x in sl]),
                ("end_logits", [float(x) for x in el])])
                for (e, offs), sl, el in zip(features, sls, els)]),
            ("predictions_json", json.dumps(preds, indent=4) + "\n"),
            ("nbest_predictions_json", json.dumps(nbest, indent=4) + "\n"),
            ("null_odds_json", json.dumps(odds, indent=4) + "\n" if v2 else None),
        ]))
    # One case a line: small, and a change shows as the cases it touches.
    print('{"generated_by": "python3 tests/squad_ref.py post", "cases": [')
    print(",\n".join(json.dumps(c, ensure_ascii=False) for c in out))
    print("]}")


def main(argv):
    cmd = argv[1] if len(argv) > 1 else "metric"
    if cmd == "word-table":
        word_table()
    elif cmd == "metric":
        show_metric()
    elif cmd == "post":
        post_fixture()
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
