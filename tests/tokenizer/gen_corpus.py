#!/usr/bin/env python3
"""Writes the tokenizer oracle's inputs into OUT_DIR, the same every run
(fixed seed): configs.json (tokenizer settings per configuration),
cases.jsonl (one text or pair per line, with the configuration and the
truncation to apply) and charvocab.txt (a vocabulary holding every
non-whitespace code point of planes 0-3 and 14, and the edges of the
private-use planes 15-16, as a word and as a "##" piece, so that every
normalized character shows as its own token with its offsets).

    python3 gen_corpus.py OUT_DIR

The texts: the English sentences of sentences.txt alone, combined and
mutated (control characters, odd whitespace, zero-width characters, accents,
case, emoji, CJK, punctuation runs, special-token look-alikes), phrases in
twenty scripts, words around the 100-character limit, random code points,
combining-mark sequences that NFD reorders, every covered code point in
order, question/context pairs cut into overlapping windows."""

import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else "."
rng = random.Random(20240611)

with open(os.path.join(HERE, "sentences.txt"), encoding="utf-8") as f:
    SENTENCES = [line.strip() for line in f if line.strip()]
QUESTIONS = [s for s in SENTENCES if s.endswith("?")]
PROSE = [s for s in SENTENCES if not s.endswith("?")]

PHRASES = [
    "Le château se trouve à l'est de la ville, près de l'église Saint-Étienne.",
    "Über die Brücke fährt täglich ein Zug nach München; die Straße ist gesperrt.",
    "El niño comió piña y jamón en la fiesta del año pasado, ¿verdad?",
    "A ação da polícia foi rápida e o coração da cidade ficou em silêncio.",
    "Zażółć gęślą jaźń — to zdanie zawiera wszystkie polskie litery.",
    "Příliš žluťoučký kůň úpěl ďábelské ódy.",
    "İstanbul'da ılık bir akşam; ĞÜŞİÖÇ ğüşıöç.",
    "Tiếng Việt có nhiều dấu: ả, ẫ, ặ, ờ, ự.",
    "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας. ΟΔΥΣΣΕΥΣ ΣΊΣΥΦΟΣ",
    "Москва — столица России, а Київ — столиця України. ЁЖ ёж Її",
    "القاهرة هي عاصمة مصر، وتقع على نهر النيل.",
    "ירושלים היא עיר עתיקה מאוד בישראל.",
    "नई दिल्ली भारत की राजधानी है।",
    "ঢাকা বাংলাদেশের রাজধানী।",
    "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย",
    "北京是中华人民共和国的首都，位于华北平原。",
    "東京は日本の首都です。カタカナとひらがな、漢字を使います。",
    "서울은 대한민국의 수도이며 한강이 흐른다.",
    "თბილისი საქართველოს დედაქალაქია.",
    "Երևանը Հայաստանի մայրաքաղաքն է։",
    "አዲስ አበባ የኢትዮጵያ ዋና ከተማ ናት።",
    "சென்னை தமிழ்நாட்டின் தலைநகரம்.",
    "ﬁnancial ﬂows, ǅemal ǈubljana ǋeka, ŉ, ẞ straße, Ω Å K",
    "𝐁𝐨𝐥𝐝 𝑖𝑡𝑎𝑙𝑖𝑐 𝔉𝔯𝔞𝔨𝔱𝔲𝔯 ① ② Ⅻ ½ ² ³ µ",
]

CONTROL = [chr(c) for c in list(range(0x00, 0x20)) + list(range(0x7F, 0xA0))]
ODD_SPACE = ["\u00a0", "\u1680", "\u2000", "\u2003", "\u2009", "\u200a", "\u2028", "\u2029",
             "\u202f", "\u205f", "\u3000", "\u0085", "\x0b", "\x0c", "\t", "\n", "\r", "\r\n",
             "  ", " \t "]
FORMAT = ["\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\ufeff", "\u2060", "\u00ad",
          "\u061c", "\u180e", "\ufffd", "\ue000", "\uf8ff", "\U000f0000", "\U000e0001"]
MARKS = ["\u0300", "\u0301", "\u0302", "\u0303", "\u0308", "\u030a", "\u0323", "\u0327",
         "\u0328", "\u0331", "\u0344", "\u0345", "\u0315", "\u031b", "\u0334", "\u05b0",
         "\u0591", "\u0610", "\u064b", "\u0651", "\u0670", "\u093c", "\u094d", "\u0e38",
         "\u0e48", "\u0f71", "\u0f72", "\u0f74", "\u0f73", "\u0f75", "\u0f81", "\u302a",
         "\u302e", "\u3099", "\u309a", "\u20d0", "\u20dd", "\u1dc0", "\ufe20", "\U0001d165",
         "\U0001d166", "\U0001d16d", "\U0001d167", "\u1ab0", "\u1885", "\u1734", "\ua9bd",
         "\U000111c9", "\u0488", "\u0903"]
BASES = list("aeiouAEIOUnNcCsSzZyY") + ["\u00e9", "\u00c5", "\u0130", "\u0131", "\u03a3",
                                          "\u1e0a", "\u1e9e", "\u00df", "\uac00", "\ud55c",
                                          "\u0915", "\u05d0", "\u0627", "\u4e2d", "\uf900",
                                          "\u2126", "\u212b", "\u0340", "1", "-"]
PUNCT = ["!!!", "?!", "...", "…", "——", "--", "''", "\"\"", "«»", "「」", "、。", "¿¡",
         "#$%&", "()[]{}", "<=>", "@^_`|~", "*+,-./:;", "\\", "·", "‰", "§¶", "†‡",
         "\u2e3a", "\u2e4e", "\u166d", "\U000111c9", "\U0001e95e", "\ufe10", "\uff01\uff1f"]
EMOJI = ["😀", "👍🏽", "👩‍💻", "🇫🇷", "❤️", "🧀", "🦄", "🫠", "🪿", "👨‍👩‍👧‍👦", "✈︎", "☃",
         "🏳️‍🌈", "🙂🙃", "\U0001f9c0"]
CJK = ["中", "国", "人", "日本", "漢字", "㐀", "䶵", "𠀀", "𪜀", "𫝀", "𫠠", "𬺰", "豈", "丽",
       "\U00030000", "\U00031350", "ｶﾀｶﾅ", "ひらがな", "한국어", "〇", "々"]
SPECIAL_LIKE = ["[MASK]", "[CLS]", "[SEP]", "[PAD]", "[UNK]", "[mask]", "[MASK", "MASK]",
                "[[MASK]]", "x[SEP]y", "[CLS][SEP]", " [MASK] ", "[MASK][MASK]", "[ MASK ]",
                "[unused0]", "[SEP ]", "##ing", "##"]
LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZéüßøœ"


def mutate(text):
    """Insert a few oddities at random places."""
    kinds = [CONTROL, ODD_SPACE, FORMAT, MARKS, PUNCT, EMOJI, CJK, SPECIAL_LIKE]
    for _ in range(rng.randint(1, 6)):
        pool = rng.choice(kinds)
        pos = rng.randint(0, len(text))
        text = text[:pos] + rng.choice(pool) + text[pos:]
    if rng.random() < 0.3:
        text = text.upper()
    if rng.random() < 0.2:
        text = "".join(ch.swapcase() if rng.random() < 0.5 else ch for ch in text)
    return text


def long_word(n):
    return "".join(rng.choice(LETTERS) for _ in range(n))


def random_codepoints(n):
    out = []
    while len(out) < n:
        r = rng.random()
        if r < 0.5:
            c = rng.randint(0x20, 0x2FFF)
        elif r < 0.8:
            c = rng.randint(0x3000, 0xFFFF)
        else:
            c = rng.randint(0x10000, 0x3FFFF)
        if 0xD800 <= c <= 0xDFFF:
            continue
        out.append(chr(c))
        if rng.random() < 0.15:
            out.append(" ")
    return "".join(out)


def mark_sequence():
    out = []
    for _ in range(rng.randint(1, 4)):
        out.append(rng.choice(BASES))
        out.extend(rng.choice(MARKS) for _ in range(rng.randint(0, 5)))
        if rng.random() < 0.3:
            out.append(" ")
    return "".join(out)


def singles():
    texts = ["", " ", "   ", "\t\n\r", "\x00", "\x00\x01\x02", "\ufffd", "\u200b", "a",
             "A", "[MASK]", "[CLS]", "\u0301", "\u0301a", "a\u0301", "e\u0301\u0323x",
             "İstanbul", "ΣΑΣ", "ǅ", "ﬁ", "𝐀", "\U0001f600", "中", " 中 ", "x中y", "!",
             "!!!!!!!!", "a.b,c;d", "don't", "U.S.A.", "$100", "3.14", "e-mail", "#hashtag",
             "@user", "http://example.com/a?b=c&d=e", "x" * 100, "x" * 101, "é" * 100,
             "é" * 101, "e\u0301" * 60, "ab\u0307" * 40, "\u0130" * 70, "a\u00adb",
             "foo\u2028bar\u2029baz\u0085qux", "tab\tsep\vvt\ffeed", "[SEP]" * 5]
    texts += PROSE + QUESTIONS + PHRASES
    for _ in range(900):
        k = rng.randint(1, 4)
        sep = rng.choice([" ", "  ", "\n", "\n\n", "\t", " \u00a0", ""])
        texts.append(sep.join(rng.choice(PROSE) for _ in range(k)))
    for _ in range(1500):
        texts.append(mutate(rng.choice(PROSE + PHRASES + QUESTIONS)))
    for _ in range(400):
        k = rng.randint(1, 3)
        texts.append(" ".join(rng.choice(PHRASES) for _ in range(k)))
    for _ in range(200):
        n = rng.choice([1, 2, 50, 98, 99, 100, 101, 102, 150, 250])
        w = long_word(n)
        if rng.random() < 0.3:
            w = w[: n // 2] + rng.choice(MARKS) + w[n // 2:]
        texts.append(rng.choice(["", "the ", "a-"]) + w + rng.choice(["", " end", ".", "!?"]))
    for _ in range(500):
        texts.append(random_codepoints(rng.randint(1, 40)))
    for _ in range(600):
        texts.append(mark_sequence())
    for _ in range(100):
        texts.append("".join(rng.choice(PUNCT + EMOJI + CJK + ODD_SPACE) for _ in range(8)))
    return texts


def pairs():
    out = []

    def context(lo, hi, mutated=False):
        sents = [rng.choice(PROSE + PHRASES[:12]) for _ in range(rng.randint(lo, hi))]
        if mutated:
            sents = [mutate(s) if rng.random() < 0.3 else s for s in sents]
        return " ".join(sents)

    # SQuAD's settings: only_second, 384, stride 128, padded.
    for _ in range(150):
        out.append((rng.choice(QUESTIONS), context(1, 40, rng.random() < 0.3),
                    "only_second", 384, 128, True))
    for _ in range(200):
        out.append((rng.choice(QUESTIONS), context(1, 12, rng.random() < 0.3),
                    "only_second", 64, 16, True))
    for _ in range(150):
        out.append((rng.choice(QUESTIONS), context(1, 6), "only_second", 32, 8, False))
    for _ in range(100):
        out.append((rng.choice(QUESTIONS), context(1, 6), "only_second", 40, 0, True))
    for _ in range(100):
        out.append((context(1, 3), context(1, 3), "longest_first", 40, 5, True))
    for _ in range(60):
        out.append((context(2, 5), rng.choice(QUESTIONS), "only_first", 30, 4, False))
    for _ in range(50):
        out.append((rng.choice(QUESTIONS), context(0, 4), "none", 128, 0, True))
    # A first text that leaves no room: the reference raises an error.
    for _ in range(20):
        out.append((context(3, 4), rng.choice(QUESTIONS), "only_second", 24, 4, True))
    out.append(("", "", "only_second", 16, 4, True))
    out.append(("", context(2, 3), "only_second", 16, 4, True))
    out.append(("what?", "", "only_second", 16, 4, True))
    out.append(("what is it", "the cat sat on the mat", "only_second", 3, 0, False))
    # max_length that leaves a text no room: windows longer than max_length
    # (include/cputrain/tokenizer.h says so; the reference decides).
    out.append(("what is it", "the cat sat on the mat", "longest_first", 3, 0, False))
    out.append(("what is it", "the cat sat on the mat", "longest_first", 4, 0, False))
    return out


def charvocab(path):
    """Every code point that is not whitespace (whitespace never reaches
    WordPiece and would break the one-token-per-line format) or NUL (which
    the Node binding refuses in a string), bare and after "##"."""
    space = {0x00, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F,
             0x205F, 0x3000} | set(range(0x2000, 0x200B))
    cps = [c for c in covered_codepoints() if c not in space]
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")
        for c in cps:
            f.write(chr(c) + "\n")
        for c in cps:
            f.write("##" + chr(c) + "\n")


def covered_codepoints():
    ranges = [(0, 0x40000), (0xE0000, 0xE1000), (0xF0000, 0xF0100), (0xFFF00, 0x100100),
              (0x10FF00, 0x110000)]
    for lo, hi in ranges:
        for c in range(lo, hi):
            if not 0xD800 <= c <= 0xDFFF:
                yield c


def every_codepoint_texts():
    """All covered code points in order, 64 per text, a space after every 4
    so that words stay short."""
    cps = list(covered_codepoints())
    texts = []
    for i in range(0, len(cps), 64):
        chunk = cps[i:i + 64]
        texts.append(" ".join("".join(chr(c) for c in chunk[k:k + 4]) for k in range(0, len(chunk), 4)))
    return texts


def main():
    os.makedirs(OUT, exist_ok=True)
    configs = {
        # BertTokenizerFast(do_lower_case=True): strip_accents None -> on
        "uncased": {"vocab": "vocab.txt", "lowercase": True, "strip_accents": None,
                    "chinese": True, "clean_text": True},
        "cased": {"vocab": "vocab.txt", "lowercase": False, "strip_accents": None,
                  "chinese": True, "clean_text": True},
        "lower_keep_accents": {"vocab": "vocab.txt", "lowercase": True, "strip_accents": False,
                               "chinese": True, "clean_text": True},
        "raw": {"vocab": "vocab.txt", "lowercase": False, "strip_accents": True,
                "chinese": False, "clean_text": False},
        "chars_uncased": {"vocab": "charvocab.txt", "lowercase": True, "strip_accents": None,
                          "chinese": True, "clean_text": True},
        "chars_cased": {"vocab": "charvocab.txt", "lowercase": False, "strip_accents": None,
                        "chinese": True, "clean_text": True},
        "chars_lower_keep_accents": {"vocab": "charvocab.txt", "lowercase": True,
                                     "strip_accents": False, "chinese": True,
                                     "clean_text": True},
        "chars_raw": {"vocab": "charvocab.txt", "lowercase": False, "strip_accents": True,
                      "chinese": False, "clean_text": False},
    }
    with open(os.path.join(OUT, "configs.json"), "w", encoding="utf-8") as f:
        json.dump(configs, f, indent=1)
    charvocab(os.path.join(OUT, "charvocab.txt"))

    n = 0
    with open(os.path.join(OUT, "cases.jsonl"), "w", encoding="utf-8") as f:
        def case(**kw):
            nonlocal n
            kw["id"] = "%s-%d" % (kw["cfg"], n)
            n += 1
            f.write(json.dumps(kw, ensure_ascii=False) + "\n")

        texts = singles()
        for cfg in ("uncased", "cased", "lower_keep_accents", "raw"):
            for t in texts:
                case(cfg=cfg, text=t)
        for cfg in ("chars_uncased", "chars_cased", "chars_lower_keep_accents", "chars_raw"):
            for t in texts[::4]:
                case(cfg=cfg, text=t)
        for t in every_codepoint_texts():
            for cfg in ("chars_uncased", "chars_cased", "chars_lower_keep_accents", "chars_raw"):
                case(cfg=cfg, text=t)
        # One text with truncation and overflow, with and without specials.
        for t in texts[::5]:
            case(cfg="uncased", text=t, special=True, max=16, stride=4, pad=True)
        for t in texts[::7]:
            case(cfg="uncased", text=t, special=False, max=12, stride=3, pad=False)
        for a, b, trunc, max_length, stride, pad in pairs():
            case(cfg="uncased", a=a, b=b, trunc=trunc, max=max_length, stride=stride, pad=pad)
    print("gen_corpus: %d cases, %d distinct single texts" % (n, len(set(texts))))


if __name__ == "__main__":
    main()
