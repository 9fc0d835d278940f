/* libFuzzer harness: the library's trainer_state.json reader
 * (ct_trainer_state_*) and cputrain-plot's series and SVG writer
 * (tools/plot/) on arbitrary bytes, read as the tool reads them. Whatever
 * the reader accepts is either refused by the history reader with a reason,
 * or drawn into a complete SVG whose every coordinate is a finite number;
 * every key and value it hands out is in bounds; nothing crashes, leaks or
 * overflows. */
#include "fuzz_common.h"

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
    const char *path = fz_write("trainer_state.json", data, size);
    ct_trainer_state *state = NULL;
    plot_history h;
    char err[1024] = "";
    ct_status rc = ct_trainer_state_load(path, &state);
    if (rc != CT_OK) {
        /* The tool prints this text: it must name the file. */
        FZ_CHECK(rc == CT_ERR_NOMEM || strstr(ct_last_error(), path) != NULL,
                 "a refusal without the file's name");
        FZ_CHECK(state == NULL, "a refused file left a state");
        return 0;
    }
    if (plot_history_read(state, path, &h, err, sizeof err) == 0) {
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
    /* Every key and value the reader hands out is within the entry. */
    for (size_t i = 0; i < ct_trainer_state_log_count(state); i++) {
        size_t n = ct_trainer_state_log_key_count(state, i), len;
        for (size_t k = 0; k < n; k++) {
            double v;
            FZ_CHECK(ct_trainer_state_log_key(state, i, k, &len) != NULL, "key %zu of %zu", k, n);
            rc = ct_trainer_state_log_value(state, i, k, &v);
            FZ_CHECK(rc == CT_OK || rc == CT_ERR_FORMAT, "value %zu: %d", k, (int)rc);
        }
        FZ_CHECK(ct_trainer_state_log_key(state, i, n, NULL) == NULL, "a key past the end");
    }
    ct_trainer_state_free(state);
    return 0;
}
