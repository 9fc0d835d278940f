/* libFuzzer harness: a command line through ct_args_parse, the input split
 * at NUL bytes into arguments (a C argv cannot hold a NUL either), then the
 * save/load round trip of what parsed. */
#include "fuzz_args.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1), *p, *end;
    const char *argv[MAX_ARGS];
    int argc = 0;
    ct_args *args = NULL;
    ct_status st;
    FZ_CHECK(copy != NULL, "no memory");
    memcpy(copy, data, size);
    copy[size] = '\0';
    for (p = copy, end = copy + size; p <= end && argc < MAX_ARGS; p += strlen(p) + 1)
        argv[argc++] = p;
    /* One argument ending in ".json" names a file to read: that is
     * fuzz_args_json's input, and here it would read whatever the
     * fuzzer's working folder holds. */
    if (argc == 1 && strlen(argv[0]) >= 5 && strcmp(argv[0] + strlen(argv[0]) - 5, ".json") == 0) {
        free(copy);
        return 0;
    }
    FZ_CHECK(ct_args_create(&args) == CT_OK, "create");
    st = ct_args_parse(args, argc, argv);
    if (st == CT_OK)
        fz_args_round_trip(args);
    else
        FZ_CHECK(st != CT_ERR_NOMEM, "parse: %s", ct_status_name(st));
    ct_args_free(args);
    free(copy);
    return 0;
}
