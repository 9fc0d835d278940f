/* libFuzzer harness: cputrain-plot's JSON reader, log_history reader and
 * SVG writer (tools/plot/) on arbitrary bytes. Its reader must take and
 * refuse what the library's own reader (with NaN / Infinity) does, apart
 * from the documented differences, which the comparison leaves out: a
 * UTF-8 byte order mark (refused, as Python does; the library skips it) and
 * \uD800..\uDFFF escapes (an unpaired one becomes U+FFFD, as Python keeps
 * it; the library refuses it). Accepted, both trees agree on types, counts
 * and numbers; every picture drawn has only finite coordinates. */
#include "fuzz_common.h"

#include "core/json.h"
#include "plot/history.h"
#include "plot/json.h"
#include "plot/svg.h"

#include <ctype.h>
#include <math.h>

static int has_surrogate_escape(const uint8_t *d, size_t n)
{
    for (size_t i = 0; i + 2 < n; i++)
        if (d[i] == '\\' && d[i + 1] == 'u' && (d[i + 2] == 'd' || d[i + 2] == 'D'))
            return 1;
    return 0;
}

static int same_number(double a, double b)
{
    return a == b || (isnan(a) && isnan(b));
}

static int same_tree(const pj_value *a, const ct__json *b)
{
    switch (b->type) {
    case CT_JSON_NULL: return a->type == PJ_NULL;
    case CT_JSON_TRUE: return a->type == PJ_BOOL && a->boolean;
    case CT_JSON_FALSE: return a->type == PJ_BOOL && !a->boolean;
    case CT_JSON_NUMBER: return a->type == PJ_NUMBER && same_number(a->number, b->num);
    case CT_JSON_STRING: return a->type == PJ_STRING;
    case CT_JSON_ARRAY:
        if (a->type != PJ_ARRAY || a->count != b->n)
            return 0;
        for (size_t i = 0; i < b->n; i++)
            if (!same_tree(&a->items[i], &b->items[i]))
                return 0;
        return 1;
    case CT_JSON_OBJECT:
        if (a->type != PJ_OBJECT || a->count != b->n)
            return 0;
        for (size_t i = 0; i < b->n; i++)
            if (!same_tree(&a->items[i], &b->members[i].value))
                return 0;
        return 1;
    }
    return 0;
}

/* Every polyline's points="..." holds digits, '.', ',', '-' and spaces
 * only. (The attribute before it ends in a quote, which no escaped series
 * name can hold, so a name cannot fake the marker.) */
static void check_points(const char *svg)
{
    static const char marker[] = "stroke-linejoin=\"round\" points=\"";
    const char *p = svg;
    while ((p = strstr(p, marker)) != NULL) {
        for (p += sizeof marker - 1; *p != '"'; p++)
            FZ_CHECK(*p != '\0' && (isdigit((unsigned char)*p) || strchr(".,- ", *p)),
                     "a coordinate is not a finite number near '%.40s'", p);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pj_value v;
    ct__json_doc *doc = NULL;
    char err[512];
    int mine = pj_parse((const char *)data, size, &v, err, sizeof err) == 0;
    int lib = ct__json_parse_ex((const char *)data, size, "fuzz", CT__JSON_ALLOW_NAN, &doc) == 0;
    int comparable = !(size >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0) &&
                     !has_surrogate_escape(data, size);
    if (comparable) {
        FZ_CHECK(mine == lib, "cputrain-plot %s, the library %s it (%s)",
                 mine ? "accepts" : "refuses", lib ? "accepts" : "refuses", mine ? "" : err);
        if (mine)
            FZ_CHECK(same_tree(&v, ct__json_root(doc)), "the two readers' trees differ");
    }
    ct__json_free(doc);
    if (mine) {
        plot_history h;
        if (plot_history_read(&v, &h, err, sizeof err) == 0) {
            char *svg = NULL;
            size_t len = 0;
            FILE *f = open_memstream(&svg, &len);
            FZ_CHECK(f != NULL, "open_memstream");
            FZ_CHECK(plot_svg_write(f, &h, "fuzz") == 0, "writing to memory failed");
            fclose(f);
            FZ_CHECK(len > 0 && strstr(svg, "</svg>\n") == svg + len - 7, "unfinished SVG");
            check_points(svg);
            free(svg);
            plot_history_free(&h);
        } else {
            FZ_CHECK(err[0] != '\0', "refused without a reason");
        }
        pj_free(&v);
    } else {
        FZ_CHECK(strncmp(err, "line ", 5) == 0, "a parse error without its place: %s", err);
    }
    return 0;
}
