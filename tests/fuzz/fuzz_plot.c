/* libFuzzer harness: cputrain-plot's log_history reader and SVG writer
 * (tools/plot/) on arbitrary bytes, read as the tool reads them: by the
 * library's JSON reader with NaN / Infinity allowed (fuzz_json covers the
 * reader itself). Whatever it accepts is either refused by the history
 * reader with a reason, or drawn into a complete SVG whose every coordinate
 * is a finite number; nothing crashes, leaks or overflows. */
#include "fuzz_common.h"

#include "core/json.h"
#include "plot/history.h"
#include "plot/svg.h"

#include <ctype.h>

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
    ct__json_doc *doc = NULL;
    plot_history h;
    char err[512] = "";
    int rc = ct__json_parse_ex((const char *)data, size, "fuzz", CT__JSON_ALLOW_NAN, &doc);
    if (rc != CT_OK) {
        /* The tool prints this text: it must say where the problem is. */
        FZ_CHECK(rc == CT_ERR_NOMEM || strncmp(ct_last_error(), "fuzz: line ", 11) == 0,
                 "a parse error without its place");
        return 0;
    }
    if (plot_history_read(ct__json_root(doc), &h, err, sizeof err) == 0) {
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
    ct__json_free(doc);
    return 0;
}
