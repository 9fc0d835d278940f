"""A reference for seqeval's entity scores (its default mode, conlleval's
rules, and mode="strict" with scheme IOB2), written from seqeval's
documented behaviour for tests/python/test_metrics.py: seqeval is not
packaged by Debian. Works on tag strings, as seqeval does, over the whole
list of sentences joined by "O" — the library works sentence by sentence
on tag ids, so the two share nothing but the rules."""


def _split(tag, strict):
    """(prefix, type) of a tag as each mode reads it."""
    rest = tag[1:]
    if strict:
        kind = rest.strip("-")
    else:
        kind = rest.split("-", 1)[-1]
    return tag[0], kind or "_"


def default_entities(sentences):
    """{(type, first, last)} over the sentences joined with "O" separators,
    positions counted in the joined list (seqeval's get_entities)."""
    flat = [t for s in sentences for t in list(s) + ["O"]] + ["O"]
    found = set()
    prev, prev_kind, begin = "O", "", 0  # seqeval's start: a type no tag has
    for i, tag in enumerate(flat):
        p, kind = _split(tag, False)
        ends = (prev in "ES"
                or (prev in "BI" and p in "BSO")
                or (prev not in "O." and prev_kind != kind))
        starts = (p in "BS"
                  or (prev in "ESO" and p in "EI")
                  or (p not in "O." and prev_kind != kind))
        if ends:
            found.add((prev_kind, begin, i - 1))
        if starts:
            begin = i
        prev, prev_kind = p, kind
    return found


def strict_iob2_entities(sentences):
    """{(sentence, type, first, last)}: B-X then any I-X."""
    found = set()
    for k, s in enumerate(sentences):
        parsed = [_split(t, True) for t in s]
        i = 0
        while i < len(parsed):
            p, kind = parsed[i]
            if p != "B":
                i += 1
                continue
            j = i + 1
            while j < len(parsed) and parsed[j] == ("I", kind):
                j += 1
            found.add((k, kind, i, j - 1))
            i = j
    return found


def _prf(correct, predicted, actual):
    p = correct / predicted if predicted else 0.0
    r = correct / actual if actual else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def scores(references, predictions, strict=False):
    """The dict evaluate's seqeval returns, for lists of sentences of tags."""
    find = strict_iob2_entities if strict else default_entities
    kind_at = 1 if strict else 0
    true, pred = find(references), find(predictions)
    out = {}
    for kind in sorted({e[kind_at] for e in true | pred}):
        t = {e for e in true if e[kind_at] == kind}
        p = {e for e in pred if e[kind_at] == kind}
        precision, recall, f1 = _prf(len(t & p), len(p), len(t))
        out[kind] = {"precision": precision, "recall": recall, "f1": f1, "number": len(t)}
    precision, recall, f1 = _prf(len(true & pred), len(pred), len(true))
    tokens = [(a, b) for r, q in zip(references, predictions) for a, b in zip(r, q)]
    out.update(overall_precision=precision, overall_recall=recall, overall_f1=f1,
               overall_accuracy=sum(a == b for a, b in tokens) / len(tokens))
    return out
