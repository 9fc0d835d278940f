#!/usr/bin/env python3
"""Generates lib/data/unicode_tables.c, the character data of the BERT
tokenizer, from the Unicode Character Database that Debian's unicode-data
package installs in /usr/share/unicode (Unicode 15.0 on Debian 12).

    python3 scripts/gen_unicode_tables.py [UCD_DIR] > lib/data/unicode_tables.c

The output is committed; run this only to regenerate it. Why the tables are
not simply "Unicode 15.0": the tokenizer must match Hugging Face's Rust
`tokenizers` character for character, and that library takes each property
from a different Unicode version:

  * control / punctuation / non-spacing mark: the `unicode_categories` crate
    0.1.1, whose tables are Unicode 8.0. We take the 15.0 categories of the
    characters that existed in 8.0 (DerivedAge.txt), then put back the
    handful of categories that changed since (CATEGORY_AS_OF_8_0 below).
  * canonical decomposition and combining classes: the
    `unicode-normalization-alignments` crate 0.1.12, Unicode 9.0. Both
    properties are frozen once a character is assigned (Unicode's stability
    policy), so the 15.0 values of characters that existed in 9.0 are exact.
  * lowercase and White_Space: Rust's standard library, Unicode 17.0 in the
    build the oracle test runs. White_Space has not changed since 6.3; the
    case pairs added in 16.0 and 17.0 are listed in LOWERCASE_AFTER_15_0.
"""

import os
import sys

UCD = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/unicode"
MAX_CP = 0x110000
SHIFT = 8  # CT__UNI_SHIFT in lib/data/unicode.h

CATEGORY_AGE = (8, 0)
DECOMPOSITION_AGE = (9, 0)

# General categories as Unicode 8.0 had them, for characters whose category
# changed later (15.0 value in the comment).
CATEGORY_AS_OF_8_0 = {
    0x1734: "Mn",   # HANUNOO SIGN PAMUDPOD, Mc since 14.0
    0x111C9: "Po",  # SHARADA SANDHI MARK, Mn since 11.0
    0x1885: "Lo",   # MONGOLIAN LETTER ALI GALI BALUDA, Mn since 9.0
    0x1886: "Lo",   # MONGOLIAN LETTER ALI GALI THREE BALUDA, Mn since 9.0
    0xA9BD: "Mc",   # JAVANESE CONSONANT SIGN KERET, Mn since 12.0
    0x166D: "Po",   # CANADIAN SYLLABICS CHI SIGN, So since 12.0
}

# Simple lowercase mappings added after Unicode 15.0 (Rust's std has them).
LOWERCASE_AFTER_15_0 = {
    # 16.0
    0x1C89: 0x1C8A, 0xA7CB: 0x0264, 0xA7CC: 0xA7CD, 0xA7DA: 0xA7DB, 0xA7DC: 0x019B,
    **{0x10D50 + i: 0x10D70 + i for i in range(0x16)},  # Garay
    # 17.0
    0xA7CE: 0xA7CF, 0xA7D2: 0xA7D3, 0xA7D4: 0xA7D5,
    **{0x16EA0 + i: 0x16EBB + i for i in range(0x19)},  # Beria Erfe
}

# Flag bits; keep in step with lib/data/unicode.h.
F_CONTROL, F_PUNCT, F_MN, F_SPACE, F_LOWER, F_DECOMP = 1, 2, 4, 8, 16, 32


def ucd_lines(name):
    with open(os.path.join(UCD, name), encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                yield [field.strip() for field in line.split(";")]


def code_range(text):
    if ".." in text:
        lo, hi = text.split("..")
        return range(int(lo, 16), int(hi, 16) + 1)
    return range(int(text, 16), int(text, 16) + 1)


def read_ages():
    age = {}
    for fields in ucd_lines("DerivedAge.txt"):
        version = tuple(int(x) for x in fields[1].split("."))
        for cp in code_range(fields[0]):
            age[cp] = version
    return age


def read_unicode_data():
    """Per code point: (category, ccc, decomposition field, lowercase).
    First/Last pairs (ideographs, Hangul, private use) cover their range."""
    data = {}
    first = None
    for fields in ucd_lines("UnicodeData.txt"):
        cp = int(fields[0], 16)
        entry = (fields[2], int(fields[3]), fields[5], int(fields[13], 16) if fields[13] else None)
        if fields[1].endswith(", First>"):
            first = cp
            continue
        if fields[1].endswith(", Last>"):
            for c in range(first, cp + 1):
                data[c] = entry
            continue
        data[cp] = entry
    return data


def main():
    age = read_ages()
    data = read_unicode_data()

    def existed(cp, version):
        return age.get(cp, (99, 0)) <= version

    def category(cp):
        if cp in CATEGORY_AS_OF_8_0:
            return CATEGORY_AS_OF_8_0[cp]
        if cp in data and existed(cp, CATEGORY_AGE):
            return data[cp][0]
        return "Cn"

    space = set()
    for fields in ucd_lines("PropList.txt"):
        if fields[1] == "White_Space":
            space.update(code_range(fields[0]))

    lower = {cp: [d[3]] for cp, d in data.items() if d[3] is not None}
    for fields in ucd_lines("SpecialCasing.txt"):
        # Rust's char::to_lowercase applies the unconditional entries only.
        if len(fields) >= 5 and fields[4]:
            continue
        cp = int(fields[0], 16)
        mapped = [int(x, 16) for x in fields[1].split()]
        if mapped != [cp]:
            lower[cp] = mapped
    for cp, low in LOWERCASE_AFTER_15_0.items():
        assert cp not in lower, hex(cp)
        lower[cp] = [low]

    canon = {}
    for cp, d in data.items():
        if d[2] and not d[2].startswith("<") and existed(cp, DECOMPOSITION_AGE):
            canon[cp] = [int(x, 16) for x in d[2].split()]

    def full_decomposition(cp):
        if cp not in canon:
            return [cp]
        out = []
        for c in canon[cp]:
            out.extend(full_decomposition(c))
        return out

    def ccc(cp):
        return data[cp][1] if cp in data and existed(cp, DECOMPOSITION_AGE) else 0

    # Per code point: a class (flags, ccc).
    classes = {(0, 0): 0}
    cls = [0] * MAX_CP
    for cp in range(MAX_CP):
        cat = category(cp)
        flags = 0
        if cat in ("Cc", "Cf", "Co"):
            flags |= F_CONTROL
        if cat.startswith("P") or (cp < 0x80 and chr(cp) in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"):
            flags |= F_PUNCT
        if cat == "Mn":
            flags |= F_MN
        if cp in space:
            flags |= F_SPACE
        if cp in lower and lower[cp] != [cp]:
            flags |= F_LOWER
        if cp in canon:
            flags |= F_DECOMP
        key = (flags, ccc(cp))
        if key not in classes:
            classes[key] = len(classes)
        cls[cp] = classes[key]
    assert len(classes) <= 256, len(classes)

    # Two-stage table: stage1[cp >> SHIFT] picks a block of stage2, the
    # blocks being shared between ranges with the same classes.
    size = 1 << SHIFT
    blocks, index = {}, []
    for start in range(0, MAX_CP, size):
        index.append(blocks.setdefault(tuple(cls[start:start + size]), len(blocks)))
    assert len(blocks) < 65536

    lower_map = {cp: v for cp, v in lower.items() if v != [cp]}
    decomp_map = {cp: full_decomposition(cp) for cp in canon}
    assert max(len(v) for v in lower_map.values()) <= 3
    assert max(len(v) for v in decomp_map.values()) <= 4

    out = []
    w = out.append
    w("/* Unicode character data of the BERT tokenizer, GENERATED by")
    w(" * scripts/gen_unicode_tables.py from Debian's unicode-data (UCD 15.0);")
    w(" * do not edit: see that script for which Unicode version each property follows. */")
    w('#include "data/unicode.h"')
    w("")
    w("_Static_assert(CT__UNI_SHIFT == %d, \"regenerate with scripts/gen_unicode_tables.py\");" % SHIFT)
    w("")
    w("const ct__uni_class ct__uni_classes[%d] = {" % len(classes))
    for (flags, c), _ in sorted(classes.items(), key=lambda kv: kv[1]):
        w("    {%d, %d}," % (flags, c))
    w("};")
    w("")
    w("const uint16_t ct__uni_stage1[%d] = {" % len(index))
    for i in range(0, len(index), 16):
        w("    " + ", ".join(str(x) for x in index[i:i + 16]) + ",")
    w("};")
    w("")
    stage2 = [c for block, _ in sorted(blocks.items(), key=lambda kv: kv[1]) for c in block]
    w("const uint8_t ct__uni_stage2[%d] = {" % len(stage2))
    for i in range(0, len(stage2), 24):
        w("    " + ", ".join(str(x) for x in stage2[i:i + 24]) + ",")
    w("};")

    def emit_map(name, mapping):
        keys = sorted(mapping)
        pool = []
        packed = []
        for cp in keys:
            packed.append(len(pool) << 3 | len(mapping[cp]))
            pool.extend(mapping[cp])
        w("")
        w("const size_t ct__uni_%s_count = %d;" % (name, len(keys)))
        w("const uint32_t ct__uni_%s_keys[%d] = {" % (name, len(keys)))
        for i in range(0, len(keys), 10):
            w("    " + ", ".join("0x%05X" % x for x in keys[i:i + 10]) + ",")
        w("};")
        w("/* (offset into the pool << 3) | number of code points */")
        w("const uint32_t ct__uni_%s_vals[%d] = {" % (name, len(keys)))
        for i in range(0, len(packed), 10):
            w("    " + ", ".join(str(x) for x in packed[i:i + 10]) + ",")
        w("};")
        w("const uint32_t ct__uni_%s_pool[%d] = {" % (name, len(pool)))
        for i in range(0, len(pool), 10):
            w("    " + ", ".join("0x%05X" % x for x in pool[i:i + 10]) + ",")
        w("};")

    emit_map("lower", lower_map)
    emit_map("decomp", decomp_map)
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
