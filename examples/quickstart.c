/* Quick start: read a run_qa.py-style command line with libcputrain's
 * training arguments, show what it means, and write training_args.json.
 * With no arguments it uses the command of the Hugging Face CPU guide. */
#include <cputrain/cputrain.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const char *const guide_command[] = {
    "--model_name_or_path", "bert-base-uncased", "--dataset_name", "squad",
    "--do_train", "--do_eval", "--per_device_train_batch_size", "12",
    "--learning_rate", "3e-5", "--num_train_epochs", "2", "--max_seq_length", "384",
    "--doc_stride", "128", "--output_dir", "/tmp/debug_squad/", "--bf16", "--use_cpu",
};

static int fail(const char *what, ct_status st)
{
    fprintf(stderr, "quickstart: %s: %s: %s\n", what, ct_status_name(st), ct_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    ct_args *args, *defaults;
    ct_status st;
    const char *output_dir;
    char path[4096], value[512], fallback[512];
    size_t i;
    int n = argc > 1 ? argc - 1 : (int)(sizeof guide_command / sizeof *guide_command);
    const char *const *av = argc > 1 ? (const char *const *)argv + 1 : guide_command;

    ct_log_set_callback(ct_log_to_stderr, NULL);
    printf("libcputrain %s\n", ct_version_string());
    if ((st = ct_args_create(&args)) != CT_OK)
        return fail("ct_args_create", st);
    if ((st = ct_args_parse(args, n, av)) != CT_OK) {
        fail("ct_args_parse", st);
        ct_args_free(args);
        return 2;
    }
    for (i = 0; i < ct_args_unparsed_count(args); i++) {
        if (strcmp(ct_args_unparsed(args, i), "--help") == 0) {
            fputs(ct_args_help(), stdout);
            ct_args_free(args);
            return 0;
        }
    }

    printf("\nTraining arguments that differ from Hugging Face's defaults:\n");
    if ((st = ct_args_create(&defaults)) != CT_OK)
        return fail("ct_args_create", st);
    for (i = 0; i < ct_args_field_count(); i++) {
        const char *name = ct_args_field_name(i);
        ct_args_get(args, name, value, sizeof value, NULL);
        ct_args_get(defaults, name, fallback, sizeof fallback, NULL);
        if (strcmp(value, fallback) != 0)
            printf("  %-30s %s\n", name, value);
    }
    ct_args_free(defaults);
    printf("\nArguments left for the application (model and data options):\n ");
    for (i = 0; i < ct_args_unparsed_count(args); i++)
        printf(" %s", ct_args_unparsed(args, i));
    printf("\n");

    ct_args_get_string(args, "output_dir", &output_dir);
    if (output_dir && *output_dir) {
        if (mkdir(output_dir, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "quickstart: cannot create %s: %s\n", output_dir, strerror(errno));
            ct_args_free(args);
            return 1;
        }
        snprintf(path, sizeof path, "%s%straining_args.json", output_dir,
                 output_dir[strlen(output_dir) - 1] == '/' ? "" : "/");
        if ((st = ct_args_save_json(args, path)) != CT_OK) {
            fail("ct_args_save_json", st);
            ct_args_free(args);
            return 1;
        }
        printf("\nWrote %s\n", path);
    }
    ct_args_free(args);
    return 0;
}
