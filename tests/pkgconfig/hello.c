/* Built by tests/pkgconfig/run.sh with nothing but pkg-config's flags: the
 * installed header and library must be enough for a C program. */
#include <cputrain/cputrain.h>

#include <stdio.h>
#include <string.h>

#define EXPECT(cond)                                                        \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "hello.c:%d: expected %s\n", __LINE__, #cond);  \
            return 1;                                                       \
        }                                                                   \
    } while (0)

int main(void)
{
    const char *argv[] = {"--bf16", "--learning_rate", "3e-5", "--output_dir", "o", "--extra"};
    ct_args *args = NULL;
    double lr = 0;
    int bf16 = 0;

    /* The header compiled against and the library loaded are the same. */
    EXPECT(ct_version_number() == CT_VERSION_NUMBER);
    EXPECT(strcmp(ct_version_string(), CT_VERSION_STRING) == 0);
    EXPECT(strcmp(ct_status_name(CT_ERR_FORMAT), "CT_ERR_FORMAT") == 0);

    EXPECT(ct_args_create(&args) == CT_OK);
    EXPECT(ct_args_parse(args, 6, argv) == CT_OK);
    EXPECT(ct_args_get_float(args, "learning_rate", &lr) == CT_OK && lr == 3e-5);
    EXPECT(ct_args_get_bool(args, "bf16", &bf16) == CT_OK && bf16 == 1);
    EXPECT(ct_args_unparsed_count(args) == 1);
    EXPECT(strcmp(ct_args_unparsed(args, 0), "--extra") == 0);
    EXPECT(ct_args_set(args, "no_such_field", "1") == CT_ERR_NOT_FOUND);
    EXPECT(strstr(ct_last_error(), "no_such_field") != NULL);
    ct_args_free(args);

    printf("hello (C): libcputrain %s ok\n", ct_version_string());
    return 0;
}
