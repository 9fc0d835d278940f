/* Reading SQuAD examples (v1.1 / v2.0 JSON, {"data": [...]} lists of flat
 * records, datasets-style JSON lines) into ct_squad's flat tables.
 *
 * Offsets: answer_start counts code points, as Python's str indices do, and
 * is kept as written; the byte offset into the UTF-8 context is computed
 * beside it, since C slices bytes.
 *
 * Bad data, decided against what run_qa.py does with it:
 * - malformed JSON, invalid UTF-8, a missing field or one of the wrong type
 *   are errors (Python fails on them too, less helpfully);
 * - an answer whose text is not at answer_start in the context is kept and
 *   counted with one warning: run_qa.py never checks, it labels training
 *   features from answer_start and len(text) alone, and SQuAD's own training
 *   file has a few such answers, so refusing them would refuse SQuAD;
 * - a question whose context is empty or only whitespace is skipped and
 *   counted with one warning: it has no token to label, and run_qa.py's
 *   prepare_train_features runs off the end of such a feature (IndexError)
 *   when the question has an answer, so no run of the reference keeps one. */
#include "data/squad.h"
#include "core/fileio.h"
#include "core/json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SQuAD v2.0's training file is 40 MB; the cap only stops absurd inputs. */
#define MAX_FILE_BYTES ((size_t)1 << 35)
#define BLOCK_BYTES ((size_t)1 << 20)
#define ID_SHOWN 100 /* characters of an id quoted in messages */

/* ---- Python string helpers ------------------------------------------------------ */

int ct__py_isspace(uint32_t cp)
{
    /* Python's _PyUnicode_IsWhitespace: bidirectional class WS, B or S, or
     * category Zs; it differs from Unicode White_Space at U+001C..U+001F. */
    if (cp < 0x80)
        return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20);
    return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
           cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/* Decode the valid UTF-8 character at s (the caller validated the text). */
static size_t decode_valid(const unsigned char *s, size_t left, uint32_t *cp)
{
    if (s[0] < 0x80 || left < 2) {
        *cp = s[0];
        return 1;
    }
    if (s[0] < 0xE0) {
        *cp = (uint32_t)(s[0] & 0x1F) << 6 | (s[1] & 0x3F);
        return 2;
    }
    if (s[0] < 0xF0 && left >= 3) {
        *cp = (uint32_t)(s[0] & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3F);
        return 3;
    }
    if (left >= 4) {
        *cp = (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3F) << 12 |
              (uint32_t)(s[2] & 0x3F) << 6 | (s[3] & 0x3F);
        return 4;
    }
    *cp = s[0];
    return 1;
}

size_t ct__py_lstrip(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        uint32_t cp;
        size_t n = decode_valid(u + i, len - i, &cp);
        if (!ct__py_isspace(cp))
            break;
        i += n;
    }
    return i;
}

static int all_space(const char *s, size_t len)
{
    return ct__py_lstrip(s, len) == len;
}

/* ---- string storage ----------------------------------------------------------------- */

struct ct__squad_block {
    ct__squad_block *next;
    size_t used, cap;
    char data[];
};

char *ct__squad_arena_copy(ct__squad_arena *a, const char *s, size_t len)
{
    ct__squad_block *b = a->head;
    char *p;
    if (len >= SIZE_MAX - sizeof *b - 1)
        return NULL;
    if (!b || b->cap - b->used < len + 1) {
        size_t cap = len + 1 > BLOCK_BYTES / 4 ? len + 1 : BLOCK_BYTES;
        ct__squad_block *nb = malloc(sizeof *nb + cap);
        if (!nb)
            return NULL;
        nb->used = 0;
        nb->cap = cap;
        /* A large string gets a block of its own behind the current one, so
         * the current block's free room is not abandoned. */
        if (b && cap != BLOCK_BYTES) {
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            a->head = nb;
        }
        b = nb;
    }
    p = b->data + b->used;
    if (len)
        memcpy(p, s, len);
    p[len] = '\0';
    b->used += len + 1;
    return p;
}

void ct__squad_arena_free(ct__squad_arena *a)
{
    ct__squad_block *b = a->head;
    while (b) {
        ct__squad_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
}

/* ---- the loader ----------------------------------------------------------------------- */

typedef struct loader {
    const char *path;
    ct_squad *s;
    size_t cap_examples, cap_answers;
    size_t line_base; /* file line of the parsed text's first line */
    size_t paragraphs;
    /* The last title and context stored, shared by the next record when
     * equal (questions of one paragraph, flat records in file order). */
    const char *title;
    size_t title_len;
    const char *ctx;
    size_t ctx_len, ctx_chars, ctx_paragraph;
    int ctx_blank;
    /* The example first counted under each statistic, for its warning. */
    char first[CT__SQUAD_STATS][ID_SHOWN + 1];
} loader;

static size_t file_line(const loader *L, const ct__json *at)
{
    return L->line_base + (at ? at->line : 1) - 1;
}

/* "<path>: line L column C: <where> (id "<id>"): <problem>" */
static ct_status fail(const loader *L, const ct__json *at, const char *where, const char *id,
                      const char *fmt, ...) CT__PRINTF(5, 6);

static ct_status fail(const loader *L, const ct__json *at, const char *where, const char *id,
                      const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (id)
        return ct__error(CT_ERR_FORMAT, "%s: line %zu column %u: %s (id \"%.*s\"): %s", L->path,
                         file_line(L, at), at ? at->col : 1u, where, ID_SHOWN, id, msg);
    return ct__error(CT_ERR_FORMAT, "%s: line %zu column %u: %s: %s", L->path, file_line(L, at),
                     at ? at->col : 1u, where, msg);
}

static ct_status nomem(const loader *L)
{
    return ct__error(CT_ERR_NOMEM, "%s: out of memory reading SQuAD examples", L->path);
}

static void count_stat(loader *L, ct_squad_stat stat, const char *id, size_t line)
{
    if (L->s->stats[stat]++ == 0)
        snprintf(L->first[stat], sizeof L->first[stat], "%.*s", ID_SHOWN, id);
    ct__log(CT_LOG_DEBUG, "%s: line %zu: id \"%.*s\": %s", L->path, line, ID_SHOWN, id,
            stat == CT_SQUAD_STAT_EMPTY_CONTEXT      ? "empty context, question skipped"
            : stat == CT_SQUAD_STAT_ANSWER_MISMATCH  ? "answer text not at answer_start"
            : stat == CT_SQUAD_STAT_DUPLICATE_ID     ? "id repeated"
                                                     : "is_impossible disagrees with answers");
}

/* A required string member. */
static ct_status need_string(const loader *L, const ct__json *obj, const char *key,
                             const char *where, const char *id, const ct__json **out)
{
    const ct__json *v = ct__json_get(obj, key);
    if (!v)
        return fail(L, obj, where, id, "missing \"%s\"", key);
    if (v->type != CT_JSON_STRING)
        return fail(L, v, where, id, "\"%s\" must be a string, not %s", key, ct__json_type_phrase(v->type));
    *out = v;
    return CT_OK;
}

/* "title": optional, a string or null (article.get("title", "")). */
static ct_status get_title(const loader *L, const ct__json *obj, const char *where,
                           const char *id, const char **title, size_t *len)
{
    const ct__json *v = ct__json_get(obj, "title");
    *title = "";
    *len = 0;
    if (!v || v->type == CT_JSON_NULL)
        return CT_OK;
    if (v->type != CT_JSON_STRING)
        return fail(L, v, where, id, "\"title\" must be a string, not %s", ct__json_type_phrase(v->type));
    *title = v->str;
    *len = v->len;
    return CT_OK;
}

/* "id": a string, or an integer (kept as its digits, as json.dumps would
 * key it in predictions.json). */
static ct_status get_id(const loader *L, const ct__json *obj, const char *where,
                        const char **id, size_t *len)
{
    const ct__json *v = ct__json_get(obj, "id");
    int64_t iv;
    if (!v)
        return fail(L, obj, where, NULL, "missing \"id\"");
    if (v->type == CT_JSON_STRING || (v->type == CT_JSON_NUMBER && ct__json_int64(v, &iv))) {
        *id = v->str;
        *len = v->type == CT_JSON_STRING ? v->len : strlen(v->str);
        return CT_OK;
    }
    if (v->type == CT_JSON_NUMBER)
        return fail(L, v, where, NULL, "\"id\" must be a string or an integer, not %s", v->str);
    return fail(L, v, where, NULL, "\"id\" must be a string, not %s", ct__json_type_phrase(v->type));
}

static ct_status get_start(const loader *L, const ct__json *v, const char *where,
                           const char *id, int64_t *start)
{
    if (v->type != CT_JSON_NUMBER)
        return fail(L, v, where, id, "\"answer_start\" must be an integer, not %s",
                    ct__json_type_phrase(v->type));
    if (!ct__json_int64(v, start))
        return fail(L, v, where, id, "\"answer_start\" must be an integer, not %s", v->str);
    return CT_OK;
}

/* Store a title, or share the previous one when equal. */
static const char *intern_title(loader *L, const char *t, size_t len)
{
    if (L->title && L->title_len == len && memcmp(L->title, t, len) == 0)
        return L->title;
    if ((L->title = ct__squad_arena_copy(&L->s->arena, t, len)) != NULL)
        L->title_len = len;
    return L->title;
}

/* Store a context, or share the previous one when equal. */
static ct_status intern_context(loader *L, const ct__json *v)
{
    if (L->ctx && L->ctx_len == v->len && memcmp(L->ctx, v->str, v->len) == 0)
        return CT_OK;
    if (!(L->ctx = ct__squad_arena_copy(&L->s->arena, v->str, v->len)))
        return nomem(L);
    L->ctx_len = v->len;
    L->ctx_chars = ct__utf8_count_chars(v->str, v->len);
    L->ctx_blank = all_space(v->str, v->len);
    L->ctx_paragraph = L->paragraphs++;
    return CT_OK;
}

/* One answer pair of the current question; `at` locates errors. */
typedef struct pending_answer {
    const ct__json *text, *start;
} pending_answer;

/* Append an example with the current context; skipped (after counting)
 * when the context is blank. Answers were validated by the caller. */
static ct_status add_example(loader *L, const ct__json *at, const char *id, size_t id_len,
                             const char *title, size_t title_len, const ct__json *question,
                             const pending_answer *ans, size_t n_ans, int is_impossible)
{
    ct_squad *s = L->s;
    ct__squad_example *ex;
    size_t k, line = file_line(L, at);

    if (L->ctx_blank) {
        count_stat(L, CT_SQUAD_STAT_EMPTY_CONTEXT, id, line);
        return CT_OK;
    }
    if (s->n == L->cap_examples) {
        size_t cap = L->cap_examples ? 2 * L->cap_examples : 256;
        ct__squad_example *e = realloc(s->examples, cap * sizeof *e);
        if (!e)
            return nomem(L);
        s->examples = e;
        L->cap_examples = cap;
    }
    if (s->n_answers + n_ans > L->cap_answers) {
        size_t cap = L->cap_answers ? 2 * L->cap_answers : 256;
        ct__squad_answer *a;
        while (cap < s->n_answers + n_ans)
            cap *= 2;
        if (!(a = realloc(s->answers, cap * sizeof *a)))
            return nomem(L);
        s->answers = a;
        L->cap_answers = cap;
    }
    ex = &s->examples[s->n];
    memset(ex, 0, sizeof *ex);
    ex->text[CT_SQUAD_ID] = ct__squad_arena_copy(&s->arena, id, id_len);
    ex->text[CT_SQUAD_TITLE] = intern_title(L, title, title_len);
    ex->text[CT_SQUAD_QUESTION] = ct__squad_arena_copy(&s->arena, question->str, question->len);
    if (!ex->text[CT_SQUAD_ID] || !ex->text[CT_SQUAD_TITLE] || !ex->text[CT_SQUAD_QUESTION])
        return nomem(L);
    ex->len[CT_SQUAD_ID] = id_len;
    ex->len[CT_SQUAD_TITLE] = title_len;
    ex->len[CT_SQUAD_QUESTION] = question->len;
    ex->text[CT_SQUAD_CONTEXT] = L->ctx;
    ex->len[CT_SQUAD_CONTEXT] = L->ctx_len;
    ex->context_chars = L->ctx_chars;
    ex->paragraph = L->ctx_paragraph;
    ex->first_answer = s->n_answers;
    ex->n_answers = n_ans;
    ex->line = line;

    for (k = 0; k < n_ans; k++) {
        ct__squad_answer *a = &s->answers[s->n_answers + k];
        const ct__json *t = ans[k].text;
        int64_t start;
        ct__json_int64(ans[k].start, &start);
        if (!(a->text = ct__squad_arena_copy(&s->arena, t->str, t->len)))
            return nomem(L);
        a->len = t->len;
        a->chars = ct__utf8_count_chars(t->str, t->len);
        a->char_start = start;
        a->byte_start = -1;
        a->matches = 0;
        if (start >= 0 && (uint64_t)start <= L->ctx_chars) {
            size_t b = ct__utf8_char_to_byte(L->ctx, L->ctx_len, (size_t)start);
            a->byte_start = (int64_t)b;
            a->matches = L->ctx_len - b >= t->len && memcmp(L->ctx + b, t->str, t->len) == 0;
        }
        if (!a->matches)
            count_stat(L, CT_SQUAD_STAT_ANSWER_MISMATCH, id, line);
    }
    if (is_impossible >= 0 && is_impossible == (n_ans > 0))
        count_stat(L, CT_SQUAD_STAT_IMPOSSIBLE_MISMATCH, id, line);
    s->n_answers += n_ans;
    s->n++;
    return CT_OK;
}

static ct_status grow_pending(loader *L, pending_answer **p, size_t *cap, size_t need)
{
    pending_answer *np;
    if (need <= *cap)
        return CT_OK;
    if (!(np = realloc(*p, need * sizeof *np)))
        return nomem(L);
    *p = np;
    *cap = need;
    return CT_OK;
}

/* A flat record: {"id", "title"?, "context", "question", "answers": {"text":
 * [...], "answer_start": [...]}}, as datasets stores SQuAD. */
static ct_status load_record(loader *L, const ct__json *rec, const char *where)
{
    const ct__json *ctx, *q, *answers, *texts, *starts;
    const char *id, *title;
    size_t id_len, title_len, k;
    pending_answer *pend = NULL;
    size_t cap = 0;
    ct_status st;

    if (rec->type != CT_JSON_OBJECT)
        return fail(L, rec, where, NULL, "expected an example object, not %s",
                    ct__json_type_phrase(rec->type));
    if ((st = get_id(L, rec, where, &id, &id_len)) != CT_OK ||
        (st = get_title(L, rec, where, id, &title, &title_len)) != CT_OK ||
        (st = need_string(L, rec, "context", where, id, &ctx)) != CT_OK ||
        (st = need_string(L, rec, "question", where, id, &q)) != CT_OK)
        return st;
    if (!(answers = ct__json_get(rec, "answers")))
        return fail(L, rec, where, id, "missing \"answers\"");
    if (answers->type != CT_JSON_OBJECT)
        return fail(L, answers, where, id,
                    "\"answers\" must be an object of \"text\" and \"answer_start\" lists, "
                    "not %s",
                    ct__json_type_phrase(answers->type));
    texts = ct__json_get(answers, "text");
    starts = ct__json_get(answers, "answer_start");
    if (!texts || !starts)
        return fail(L, answers, where, id, "\"answers\" lacks \"%s\"",
                    texts ? "answer_start" : "text");
    if (texts->type != CT_JSON_ARRAY)
        return fail(L, texts, where, id, "\"answers\".\"text\" must be a list, not %s",
                    ct__json_type_phrase(texts->type));
    if (starts->type != CT_JSON_ARRAY)
        return fail(L, starts, where, id, "\"answers\".\"answer_start\" must be a list, not %s",
                    ct__json_type_phrase(starts->type));
    if (texts->n != starts->n)
        return fail(L, answers, where, id,
                    "\"answers\" has %zu texts but %zu answer_start values", texts->n,
                    starts->n);
    if ((st = grow_pending(L, &pend, &cap, texts->n)) != CT_OK)
        return st;
    for (k = 0; k < texts->n; k++) {
        int64_t start;
        if (texts->items[k].type != CT_JSON_STRING) {
            st = fail(L, &texts->items[k], where, id,
                      "\"answers\".\"text\"[%zu] must be a string, not %s", k,
                      ct__json_type_phrase(texts->items[k].type));
            goto out;
        }
        if ((st = get_start(L, &starts->items[k], where, id, &start)) != CT_OK)
            goto out;
        pend[k].text = &texts->items[k];
        pend[k].start = &starts->items[k];
    }
    if ((st = intern_context(L, ctx)) == CT_OK)
        st = add_example(L, rec, id, id_len, title, title_len, q, pend, texts->n, -1);
out:
    free(pend);
    return st;
}

/* One question of a SQuAD paragraph, the paragraph's context interned. */
static ct_status load_qa(loader *L, const ct__json *qa, const char *where, const char *title,
                         size_t title_len, pending_answer **pend, size_t *cap)
{
    const ct__json *q, *answers, *imp;
    const char *id;
    size_t id_len, k;
    int is_impossible = -1;
    char awhere[176];
    ct_status st;

    if (qa->type != CT_JSON_OBJECT)
        return fail(L, qa, where, NULL, "expected a question object, not %s", ct__json_type_phrase(qa->type));
    if ((st = get_id(L, qa, where, &id, &id_len)) != CT_OK ||
        (st = need_string(L, qa, "question", where, id, &q)) != CT_OK)
        return st;
    if (!(answers = ct__json_get(qa, "answers")))
        return fail(L, qa, where, id, "missing \"answers\"");
    if (answers->type != CT_JSON_ARRAY)
        return fail(L, answers, where, id, "\"answers\" must be a list, not %s",
                    ct__json_type_phrase(answers->type));
    if ((imp = ct__json_get(qa, "is_impossible")) != NULL) {
        if (imp->type != CT_JSON_TRUE && imp->type != CT_JSON_FALSE)
            return fail(L, imp, where, id, "\"is_impossible\" must be true or false, not %s",
                        ct__json_type_phrase(imp->type));
        is_impossible = imp->type == CT_JSON_TRUE;
    }
    if ((st = grow_pending(L, pend, cap, answers->n)) != CT_OK)
        return st;
    for (k = 0; k < answers->n; k++) {
        const ct__json *a = &answers->items[k], *t, *start;
        int64_t sv;
        snprintf(awhere, sizeof awhere, "%s.answers[%zu]", where, k);
        if (a->type != CT_JSON_OBJECT)
            return fail(L, a, awhere, id, "expected an answer object, not %s", ct__json_type_phrase(a->type));
        if ((st = need_string(L, a, "text", awhere, id, &t)) != CT_OK)
            return st;
        if (!(start = ct__json_get(a, "answer_start")))
            return fail(L, a, awhere, id, "missing \"answer_start\"");
        if ((st = get_start(L, start, awhere, id, &sv)) != CT_OK)
            return st;
        (*pend)[k].text = t;
        (*pend)[k].start = start;
    }
    return add_example(L, qa, id, id_len, title, title_len, q, *pend, answers->n,
                       is_impossible);
}

/* One article of a SQuAD file: {"title", "paragraphs": [{"context", "qas"}]}. */
static ct_status load_article(loader *L, const ct__json *art, size_t ai)
{
    const ct__json *pars;
    const char *title;
    size_t title_len, pi, qi, cap = 0;
    pending_answer *pend = NULL;
    char where[128];
    ct_status st = CT_OK;

    snprintf(where, sizeof where, "data[%zu]", ai);
    if ((st = get_title(L, art, where, NULL, &title, &title_len)) != CT_OK)
        return st;
    pars = ct__json_get(art, "paragraphs");
    if (pars->type != CT_JSON_ARRAY)
        return fail(L, pars, where, NULL, "\"paragraphs\" must be a list, not %s",
                    ct__json_type_phrase(pars->type));
    for (pi = 0; pi < pars->n && st == CT_OK; pi++) {
        const ct__json *par = &pars->items[pi], *ctx, *qas;
        snprintf(where, sizeof where, "data[%zu].paragraphs[%zu]", ai, pi);
        if (par->type != CT_JSON_OBJECT) {
            st = fail(L, par, where, NULL, "expected a paragraph object, not %s",
                      ct__json_type_phrase(par->type));
            break;
        }
        if ((st = need_string(L, par, "context", where, NULL, &ctx)) != CT_OK)
            break;
        if (!(qas = ct__json_get(par, "qas"))) {
            st = fail(L, par, where, NULL, "missing \"qas\"");
            break;
        }
        if (qas->type != CT_JSON_ARRAY) {
            st = fail(L, qas, where, NULL, "\"qas\" must be a list, not %s", ct__json_type_phrase(qas->type));
            break;
        }
        if ((st = intern_context(L, ctx)) != CT_OK)
            break;
        for (qi = 0; qi < qas->n && st == CT_OK; qi++) {
            snprintf(where, sizeof where, "data[%zu].paragraphs[%zu].qas[%zu]", ai, pi, qi);
            st = load_qa(L, &qas->items[qi], where, title, title_len, &pend, &cap);
        }
    }
    free(pend);
    return st;
}

/* A whole parsed document. */
static ct_status load_document(loader *L, const ct__json *root)
{
    const ct__json *data;
    size_t i;
    char where[64];
    ct_status st;

    if (root->type == CT_JSON_ARRAY) {
        for (i = 0; i < root->n; i++) {
            snprintf(where, sizeof where, "[%zu]", i);
            if ((st = load_record(L, &root->items[i], where)) != CT_OK)
                return st;
        }
        return CT_OK;
    }
    if (root->type != CT_JSON_OBJECT)
        return ct__error(CT_ERR_FORMAT,
                         "%s: expected SQuAD JSON (an object with a \"data\" list) or JSON lines "
                         "(one example object per line), not %s",
                         L->path, ct__json_type_phrase(root->type));
    if (!(data = ct__json_get(root, "data"))) {
        /* JSON lines holding one record. */
        if (ct__json_get(root, "context"))
            return load_record(L, root, "record 0");
        return ct__error(CT_ERR_FORMAT,
                         "%s: expected SQuAD JSON (an object with a \"data\" list) or JSON lines "
                         "(one example object per line); found an object without \"data\"",
                         L->path);
    }
    if (data->type != CT_JSON_ARRAY)
        return fail(L, data, "data", NULL, "\"data\" must be a list, not %s",
                    ct__json_type_phrase(data->type));
    for (i = 0; i < data->n; i++) {
        const ct__json *item = &data->items[i];
        /* SQuAD articles have "paragraphs"; run_qa.py's own files (read with
         * field="data") hold flat records there instead. */
        if (item->type == CT_JSON_OBJECT && ct__json_get(item, "paragraphs")) {
            st = load_article(L, item, i);
        } else {
            snprintf(where, sizeof where, "data[%zu]", i);
            if (item->type == CT_JSON_OBJECT && !ct__json_get(item, "context"))
                return fail(L, item, where, NULL,
                            "neither a SQuAD article (no \"paragraphs\") nor an example "
                            "(no \"context\")");
            st = load_record(L, item, where);
        }
        if (st != CT_OK)
            return st;
    }
    return CT_OK;
}

static int blank_line(const char *p, const char *end)
{
    for (; p < end; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r')
            return 0;
    return 1;
}

/* The parser names line 1 of the one line it saw; put the file's line back
 * into its message. */
static ct_status relocate_error(const loader *L, ct_status st, size_t line)
{
    char old[1024], head[64];
    const char *rest = old;
    unsigned col = 1;
    size_t plen = strlen(L->path);
    int used = 0;
    snprintf(old, sizeof old, "%s", ct_last_error());
    if (strncmp(old, L->path, plen) == 0 &&
        sscanf(old + plen, ": line 1 column %u: %n", &col, &used) == 1 && used > 0)
        rest = old + plen + used;
    snprintf(head, sizeof head, "line %zu column %u", line, col);
    return ct__error(st, "%s: %s: %s", L->path, head, rest);
}

/* JSON lines: one record per line, blank lines allowed. */
static ct_status load_lines(loader *L, const char *text, size_t len)
{
    const char *p = text, *end = text + len;
    size_t line = 1, record = 0;
    char where[64];
    ct_status st;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (!blank_line(p, le)) {
            ct__json_doc *doc = NULL;
            if ((st = ct__json_parse(p, (size_t)(le - p), L->path, &doc)) != CT_OK)
                return relocate_error(L, st, line);
            L->line_base = line;
            snprintf(where, sizeof where, "record %zu", record++);
            st = load_record(L, ct__json_root(doc), where);
            ct__json_free(doc);
            if (st != CT_OK)
                return st;
        }
        line++;
        p = nl ? nl + 1 : end;
    }
    return CT_OK;
}

/* After the whole file failed to parse: is it JSON lines? Its first line
 * must be an example object on its own, and another line must follow. */
static int looks_like_lines(const loader *L, const char *text, size_t len)
{
    const char *p = text, *end = text + len, *nl, *a = NULL, *b = NULL;
    ct__json_doc *doc = NULL;
    int yes = 0;
    while (p < end) {
        nl = memchr(p, '\n', (size_t)(end - p));
        if (!blank_line(p, nl ? nl : end)) {
            if (a)
                break;
            a = p;
            b = nl ? nl : end;
        }
        p = nl ? nl + 1 : end;
    }
    if (!a || p >= end)
        return 0; /* no line, or nothing after the first */
    if (ct__json_parse(a, (size_t)(b - a), L->path, &doc) == CT_OK) {
        const ct__json *r = ct__json_root(doc);
        yes = r->type == CT_JSON_OBJECT && !ct__json_get(r, "data");
        ct__json_free(doc);
    }
    return yes;
}

typedef struct id_key {
    const char *id;
    size_t len, index;
} id_key;

static int cmp_ids(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    if (c)
        return c;
    return al < bl ? -1 : al > bl;
}

static int cmp_id_key(const void *pa, const void *pb)
{
    const id_key *a = pa, *b = pb;
    int c = cmp_ids(a->id, a->len, b->id, b->len);
    if (c)
        return c;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* The arrays handed out, the id index, duplicate ids, and the warnings. */
static ct_status finish(loader *L)
{
    ct_squad *s = L->s;
    size_t i, f;
    id_key *keys;

    if (s->n == 0)
        return CT_OK;
    for (f = 0; f < CT__SQUAD_FIELDS; f++)
        if (!(s->field_texts[f] = malloc(s->n * sizeof(char *))))
            return nomem(L);
    if (!(s->answer_counts = malloc(s->n * sizeof(size_t))) ||
        !(s->answer_texts = malloc((s->n_answers ? s->n_answers : 1) * sizeof(char *))) ||
        !(s->by_id = malloc(s->n * sizeof(size_t))))
        return nomem(L);
    for (i = 0; i < s->n; i++) {
        for (f = 0; f < CT__SQUAD_FIELDS; f++)
            s->field_texts[f][i] = s->examples[i].text[f];
        s->answer_counts[i] = s->examples[i].n_answers;
    }
    for (i = 0; i < s->n_answers; i++)
        s->answer_texts[i] = s->answers[i].text;

    if (!(keys = malloc(s->n * sizeof *keys)))
        return nomem(L);
    for (i = 0; i < s->n; i++) {
        keys[i].id = s->examples[i].text[CT_SQUAD_ID];
        keys[i].len = s->examples[i].len[CT_SQUAD_ID];
        keys[i].index = i;
    }
    qsort(keys, s->n, sizeof *keys, cmp_id_key);
    for (i = 0; i < s->n; i++) {
        s->by_id[i] = keys[i].index;
        if (i > 0 && cmp_ids(keys[i].id, keys[i].len, keys[i - 1].id, keys[i - 1].len) == 0)
            count_stat(L, CT_SQUAD_STAT_DUPLICATE_ID, keys[i].id,
                       s->examples[keys[i].index].line);
    }
    free(keys);
    return CT_OK;
}

static void warn_stats(const loader *L)
{
    const size_t *st = L->s->stats;
    if (st[CT_SQUAD_STAT_EMPTY_CONTEXT])
        ct__log(CT_LOG_WARNING,
                "%s: skipped %zu question(s) whose context is empty or only whitespace "
                "(first: id \"%s\")",
                L->path, st[CT_SQUAD_STAT_EMPTY_CONTEXT], L->first[CT_SQUAD_STAT_EMPTY_CONTEXT]);
    if (st[CT_SQUAD_STAT_ANSWER_MISMATCH])
        ct__log(CT_LOG_WARNING,
                "%s: %zu answer(s) are not found at their answer_start in the context (first: "
                "id \"%s\"); kept, as run_qa.py keeps them",
                L->path, st[CT_SQUAD_STAT_ANSWER_MISMATCH],
                L->first[CT_SQUAD_STAT_ANSWER_MISMATCH]);
    if (st[CT_SQUAD_STAT_DUPLICATE_ID])
        ct__log(CT_LOG_WARNING,
                "%s: %zu example(s) repeat an earlier example's id (first: \"%s\"); predictions "
                "are keyed by id",
                L->path, st[CT_SQUAD_STAT_DUPLICATE_ID], L->first[CT_SQUAD_STAT_DUPLICATE_ID]);
    if (st[CT_SQUAD_STAT_IMPOSSIBLE_MISMATCH])
        ct__log(CT_LOG_WARNING,
                "%s: %zu question(s) have an \"is_impossible\" that disagrees with their answers "
                "(first: id \"%s\"); the answers decide, as in run_qa.py",
                L->path, st[CT_SQUAD_STAT_IMPOSSIBLE_MISMATCH],
                L->first[CT_SQUAD_STAT_IMPOSSIBLE_MISMATCH]);
}

ct_status ct__squad_parse(const char *path, const char *text, size_t len, int lines,
                          ct_squad **out)
{
    loader L;
    ct_squad *s;
    ct__json_doc *doc = NULL;
    char saved[1024];
    ct_status st;

    *out = NULL;
    if (!(s = calloc(1, sizeof *s)))
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", path);
    memset(&L, 0, sizeof L);
    L.path = path;
    L.s = s;
    L.line_base = 1;

    if (lines)
        st = load_lines(&L, text, len);
    else if ((st = ct__json_parse(text, len, path, &doc)) == CT_OK) {
        st = load_document(&L, ct__json_root(doc));
        ct__json_free(doc);
    } else if (st == CT_ERR_FORMAT) {
        snprintf(saved, sizeof saved, "%s", ct_last_error());
        if (looks_like_lines(&L, text, len))
            st = load_lines(&L, text, len);
        else
            ct__error(st, "%s", saved);
    }
    if (st == CT_OK)
        st = finish(&L);
    if (st != CT_OK) {
        ct_squad_free(s);
        return st;
    }
    warn_stats(&L);
    *out = s;
    return CT_OK;
}

static int is_table_file(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot && !strchr(dot, '/') && (!strcmp(dot, ".parquet") || !strcmp(dot, ".arrow"));
}

ct_status ct_squad_load(const char *path, ct_squad **out)
{
    char *text = NULL;
    size_t len = 0;
    ct_status st;

    CT__CHECK_ARG(out);
    *out = NULL;
    CT__CHECK_ARG(path);
    if (is_table_file(path)) {
        ct_table *t = NULL;
        if ((st = ct_table_load(path, &t)) == CT_OK)
            st = ct_squad_from_table(t, path, out);
        ct_table_free(t);
        return st;
    }
    if ((st = ct__read_file(path, MAX_FILE_BYTES, &text, &len)) != CT_OK)
        return st;
    st = ct__squad_parse(path, text, len, 0, out);
    free(text);
    return st;
}

void ct_squad_free(ct_squad *s)
{
    size_t f;
    if (!s)
        return;
    for (f = 0; f < CT__SQUAD_FIELDS; f++)
        free(s->field_texts[f]);
    free(s->answer_texts);
    free(s->answer_counts);
    free(s->by_id);
    free(s->examples);
    free(s->answers);
    ct__squad_arena_free(&s->arena);
    free(s);
}

/* ---- accessors ------------------------------------------------------------------------ */

size_t ct_squad_count(const ct_squad *s)
{
    return s ? s->n : 0;
}

size_t ct_squad_stat_count(const ct_squad *s, ct_squad_stat stat)
{
    if (!s || (unsigned)stat >= CT__SQUAD_STATS)
        return 0;
    return s->stats[stat];
}

const char *ct_squad_text(const ct_squad *s, size_t example, ct_squad_field field, size_t *len)
{
    if (!s || example >= s->n || (unsigned)field >= CT__SQUAD_FIELDS)
        return NULL;
    if (len)
        *len = s->examples[example].len[field];
    return s->examples[example].text[field];
}

const char *const *ct_squad_texts(const ct_squad *s, ct_squad_field field)
{
    if (!s || (unsigned)field >= CT__SQUAD_FIELDS)
        return NULL;
    return s->field_texts[field];
}

size_t ct_squad_context_chars(const ct_squad *s, size_t example)
{
    return s && example < s->n ? s->examples[example].context_chars : 0;
}

size_t ct_squad_answer_count(const ct_squad *s, size_t example)
{
    return s && example < s->n ? s->examples[example].n_answers : 0;
}

ct_status ct_squad_answer(const ct_squad *s, size_t example, size_t k, const char **text,
                          size_t *len, int64_t *char_start, int64_t *byte_start, int *matches)
{
    const ct__squad_answer *a;
    CT__CHECK_ARG(s);
    if (example >= s->n)
        return ct__error(CT_ERR_INVALID_ARG, "%s: example %zu out of range (%zu examples)",
                         __func__, example, s->n);
    if (k >= s->examples[example].n_answers)
        return ct__error(CT_ERR_INVALID_ARG, "%s: answer %zu out of range (example %zu has %zu)",
                         __func__, k, example, s->examples[example].n_answers);
    a = &s->answers[s->examples[example].first_answer + k];
    if (text)
        *text = a->text;
    if (len)
        *len = a->len;
    if (char_start)
        *char_start = a->char_start;
    if (byte_start)
        *byte_start = a->byte_start;
    if (matches)
        *matches = a->matches;
    return CT_OK;
}

const char *const *ct_squad_answer_texts(const ct_squad *s)
{
    return s ? s->answer_texts : NULL;
}

const size_t *ct_squad_answer_counts(const ct_squad *s)
{
    return s ? s->answer_counts : NULL;
}

ct_status ct_squad_find(const ct_squad *s, const char *id, size_t *example)
{
    size_t lo = 0, hi, len;
    CT__CHECK_ARG(s);
    CT__CHECK_ARG(id);
    CT__CHECK_ARG(example);
    len = strlen(id);
    hi = s->n;
    /* Lower bound: by_id orders equal ids by index, so this is the first. */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const ct__squad_example *e = &s->examples[s->by_id[mid]];
        if (cmp_ids(e->text[CT_SQUAD_ID], e->len[CT_SQUAD_ID], id, len) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < s->n) {
        const ct__squad_example *e = &s->examples[s->by_id[lo]];
        if (cmp_ids(e->text[CT_SQUAD_ID], e->len[CT_SQUAD_ID], id, len) == 0) {
            *example = s->by_id[lo];
            return CT_OK;
        }
    }
    return ct__error(CT_ERR_NOT_FOUND, "no example with id \"%.*s\"", ID_SHOWN, id);
}
