/* Shared by the two ct_args harnesses: the training_args.json round trip
 * (save, load into a fresh handle, every field equal as ct_args_get text). */
#ifndef CT_FUZZ_ARGS_H
#define CT_FUZZ_ARGS_H

#include "fuzz_common.h"

static void fz_args_get(const ct_args *a, const char *name, char **text)
{
    size_t len = 0;
    FZ_CHECK(ct_args_get(a, name, NULL, 0, &len) == CT_OK, "get %s length", name);
    *text = malloc(len + 1);
    FZ_CHECK(*text != NULL, "no memory");
    FZ_CHECK(ct_args_get(a, name, *text, len + 1, NULL) == CT_OK, "get %s", name);
}

/* What ct_args_save_json writes of `args` must load back as the same
 * values: the property that found invalid JSON reported as success. */
static inline void fz_args_round_trip(const ct_args *args)
{
    const char *path = fz_path("training_args.json");
    ct_args *back = NULL;
    size_t f, n = ct_args_field_count();
    ct_status st;
    FZ_CHECK(ct_args_create(&back) == CT_OK, "create");
    st = ct_args_save_json(args, path);
    FZ_CHECK(st == CT_OK, "arguments that parsed cannot be saved (%s)", ct_status_name(st));
    st = ct_args_load_json(back, path);
    FZ_CHECK(st == CT_OK, "training_args.json as saved does not load back (%s)",
             ct_status_name(st));
    for (f = 0; f < n; f++) {
        const char *name = ct_args_field_name(f);
        char *x, *y;
        fz_args_get(args, name, &x);
        fz_args_get(back, name, &y);
        FZ_CHECK(strcmp(x, y) == 0, "%s: \"%s\" came back as \"%s\"", name, x, y);
        free(x);
        free(y);
    }
    ct_args_free(back);
}

#endif
