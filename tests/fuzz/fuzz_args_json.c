/* libFuzzer harness: training_args.json through ct_args_load_json (applied
 * on top of the defaults, validated), then the save/load round trip. */
#include "fuzz_args.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ct_args *args = NULL;
    const char *path = fz_write("input.json", data, size);
    ct_status st;
    size_t i;
    FZ_CHECK(ct_args_create(&args) == CT_OK, "create");
    st = ct_args_load_json(args, path);
    if (st == CT_OK) {
        for (i = 0; i < ct_args_unparsed_count(args); i++)
            FZ_CHECK(ct_args_unparsed(args, i) != NULL, "unparsed %zu", i);
        fz_args_round_trip(args);
    } else {
        FZ_CHECK(st != CT_ERR_NOMEM, "load: %s", ct_status_name(st));
    }
    ct_args_free(args);
    return 0;
}
