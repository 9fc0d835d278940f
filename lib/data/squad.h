/* Internal SQuAD data shared by the reader, the metric, post-processing and
 * the QA feature builder: the tables behind ct_squad and the Python string
 * semantics (code point offsets, str.isspace, json.dumps) they rely on. */
#ifndef CT_DATA_SQUAD_H
#define CT_DATA_SQUAD_H

#include "core/error.h"
#include "core/strbuf.h"
#include "core/utf8.h"

#include <cputrain/cputrain.h>

#include <stddef.h>
#include <stdint.h>

#define CT__SQUAD_FIELDS 4 /* ct_squad_field values */
#define CT__SQUAD_STATS 4  /* ct_squad_stat values */

typedef struct ct__squad_answer {
    const char *text; /* NUL-terminated */
    size_t len;       /* bytes */
    size_t chars;     /* len(text) in Python: end_char = char_start + chars */
    int64_t char_start;
    int64_t byte_start; /* -1 when char_start is outside [0, context chars] */
    int matches;        /* context[char_start : char_start + chars] == text */
} ct__squad_answer;

typedef struct ct__squad_example {
    const char *text[CT__SQUAD_FIELDS]; /* by ct_squad_field, NUL-terminated */
    size_t len[CT__SQUAD_FIELDS];       /* bytes */
    size_t context_chars;
    /* Examples of one paragraph (equal consecutive contexts in flat files)
     * share a context pointer and this number, so a feature builder can
     * tokenize each context once. */
    size_t paragraph;
    size_t first_answer, n_answers; /* into ct_squad.answers */
    size_t line;                    /* line of the record in the file, for messages */
} ct__squad_example;

/* Strings live in a list of blocks that never move, so pointers into them
 * stay valid while the owner grows. */
typedef struct ct__squad_block ct__squad_block;
typedef struct ct__squad_arena {
    ct__squad_block *head;
} ct__squad_arena;
/* Copy s[0..len) and a NUL; NULL when out of memory. */
char *ct__squad_arena_copy(ct__squad_arena *a, const char *s, size_t len);
void ct__squad_arena_free(ct__squad_arena *a);

struct ct_squad {
    ct__squad_example *examples;
    size_t n;
    ct__squad_answer *answers;
    size_t n_answers;
    /* The arrays ct_squad_texts, _answer_texts and _answer_counts hand out. */
    const char **field_texts[CT__SQUAD_FIELDS];
    const char **answer_texts;
    size_t *answer_counts;
    size_t *by_id; /* example indices sorted by id, then by index */
    size_t stats[CT__SQUAD_STATS];
    ct__squad_arena arena;
};

/* ---- Python string semantics ------------------------------------------------- */

/* str.isspace() of one code point (what str.split() and str.strip() cut). */
int ct__py_isspace(uint32_t cp);
/* Bytes of leading whitespace str.lstrip() removes; run_qa.py strips each
 * question this way before tokenizing. s must be valid UTF-8. */
size_t ct__py_lstrip(const char *s, size_t len);
/* A JSON string literal as Python's json.dumps writes it by default
 * (ensure_ascii=True): non-ASCII as \uxxxx, surrogate pairs above the BMP.
 * s must be valid UTF-8. */
int ct__json_write_ascii(ct__strbuf *sb, const char *s, size_t len);

/* Examples from text in any form ct_squad_load reads (`lines`: JSON lines
 * only, no whole-document attempt first); `path` names it in errors. */
ct_status ct__squad_parse(const char *path, const char *text, size_t len, int lines,
                          ct_squad **out);

/* ---- the metric's pieces, for tests ---------------------------------------------- */

/* normalize_answer(s) of the SQuAD scripts: the tokens of
 * white_space_fix(remove_articles(remove_punc(lower(s)))) joined by single
 * spaces, malloc'ed and NUL-terminated. CT_ERR_INVALID_ARG for invalid UTF-8. */
ct_status ct__squad_normalize(const char *s, size_t len, char **out, size_t *out_len);
/* One prediction against one reference: exact (0/1) and F1 (0..1) as the
 * v1.1 script (version_2 0) or the v2.0 script (1, where an empty answer
 * only matches an empty answer) computes them. */
ct_status ct__squad_pair_scores(const char *prediction, const char *truth, int version_2,
                                double *exact, double *f1);

#endif
