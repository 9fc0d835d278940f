/* An example script's command line: TrainingArguments go to ct_args, the
 * script's own arguments to its options struct, and every other name is
 * decided by the library's table of fates (ct_args_known_*), so that
 * nothing typed is silently dropped. */
#include "script.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const fate_names[] = {"implemented", "no effect", "refused", "?"};

/* HfArgumentParser's truthy and falsy words. */
static int bool_word(const char *s, int *out)
{
    static const char *const yes[] = {"true", "yes", "t", "y", "1"};
    static const char *const no[] = {"false", "no", "f", "n", "0"};
    for (int i = 0; i < 5; i++) {
        if (!strcasecmp(s, yes[i]) || !strcasecmp(s, no[i])) {
            *out = !strcasecmp(s, yes[i]);
            return 1;
        }
    }
    return 0;
}

void script_usage_fates(const char *group, int fate)
{
    for (size_t i = 0; i < ct_args_known_count(); i++)
        if (strcmp(ct_args_known_group(i), group) == 0 && ct_args_known_fate(i) == fate)
            printf("  --%-26s %s: %s.\n", ct_args_known_name(i),
                   fate == CT_ARG_NO_EFFECT ? "No effect" : "Refused", ct_args_known_reason(i));
}

void script_usage_options(const script_option *table, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int ignored =
            table[i].kind == SCRIPT_NO_EFFECT || table[i].kind == SCRIPT_NO_EFFECT_FLAG;
        printf("  --%-26s %s%s%s\n", table[i].name, ignored ? "No effect: " : "", table[i].help,
               ignored ? "." : "");
    }
}

/* A name that is not one of the script's own: the library's table decides.
 * A no-effect name is accepted with its warning, a refused one fails with
 * the reason, and a name neither the script nor TrainingArguments has is an
 * error. */
static int takes(const char *const *groups, const char *group)
{
    for (; groups && *groups; groups++)
        if (strcmp(*groups, group) == 0)
            return 1;
    return !groups;
}

/* The script's own names, for abbreviations and suggestions. */
static const char *own_names[256];
static size_t n_own;

static int set_known(ct_args *args, const char *const *groups, const char *name,
                     const char *value, int *used_value)
{
    size_t k;
    int b, flag;
    ct_status st;
    if (ct_args_known_index(name, &k) != CT_OK || !takes(groups, ct_args_known_group(k))) {
        const char *near = ct_args_closest_name(name, own_names, n_own);
        fprintf(stderr, "%s: unknown argument --%s: neither %s nor TrainingArguments has it "
                        "(%s%s%ssee --help)\n", script_prog, name, script_name,
                near ? "did you mean --" : "", near ? near : "", near ? "? " : "");
        return -1;
    }
    flag = ct_args_known_type(k) == CT_ARG_BOOL;
    if (flag && !(value && bool_word(value, &b)))
        value = NULL; /* a bare --flag */
    else if (!flag && (!value || strncmp(value, "--", 2) == 0)) {
        fprintf(stderr, "%s: argument --%s: expected one argument\n", script_prog, name);
        return -1;
    }
    *used_value = value != NULL;
    if ((st = ct_args_set(args, name, value ? value : "True")) != CT_OK) {
        fprintf(stderr, "%s: %s (%s %s)\n", script_prog, ct_last_error(),
                fate_names[ct_args_known_fate(k) & 3], ct_args_known_group(k));
        return -1;
    }
    return 0;
}

/* An INT row's value: in its range, never cut to the low bits. */
static int parse_int(const script_option *r, const char *value, long *out)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(value, &end, 10);
    if (errno == ERANGE || (!errno && *end == '\0' && end != value && (v < r->min || v > r->max))) {
        fprintf(stderr, "%s: argument --%s: %s is out of range [%ld, %ld]\n", script_prog,
                r->name, value, r->min, r->max);
        return -1;
    }
    if (errno || *end || end == value) {
        fprintf(stderr, "%s: argument --%s: invalid int value: '%s'\n", script_prog, r->name,
                value);
        return -1;
    }
    *out = v;
    return 0;
}

static int set_option(const script_option *table, size_t n, void *values,
                      const char *const *groups, ct_args *args, const char *name,
                      const char *value, int *used_value)
{
    *used_value = 0;
    for (size_t i = 0; i < n; i++) {
        const script_option *r = &table[i];
        void *field = (char *)values + r->offset;
        char *end;
        int b;
        if (strcmp(name, r->name) != 0)
            continue;
        if (r->kind == SCRIPT_NO_EFFECT_FLAG || r->kind == SCRIPT_NO_EFFECT) {
            if (r->kind == SCRIPT_NO_EFFECT ? value && strncmp(value, "--", 2) != 0
                                            : value && bool_word(value, &b))
                *used_value = 1;
            else if (r->kind == SCRIPT_NO_EFFECT) {
                fprintf(stderr, "%s: argument --%s: expected one argument\n", script_prog, name);
                return -1;
            }
            script_warn("--%s%s%s has no effect here: %s", name, *used_value ? " " : "",
                        *used_value ? value : "", r->help);
            return 0;
        }
        if (r->kind == SCRIPT_FLAG) {
            int truth = 1;
            if (value && bool_word(value, &truth))
                *used_value = 1;
            else
                truth = 1;
            *(int *)field = truth;
            return 0;
        }
        if (!value || strncmp(value, "--", 2) == 0) {
            fprintf(stderr, "%s: argument --%s: expected one argument\n", script_prog, name);
            return -1;
        }
        *used_value = 1;
        if (r->kind == SCRIPT_TEXT) {
            *(const char **)field = value;
        } else if (r->kind == SCRIPT_INT) {
            if (parse_int(r, value, (long *)field) != 0)
                return -1;
        } else {
            *(double *)field = strtod(value, &end);
            if (*end || end == value) {
                fprintf(stderr, "%s: argument --%s: invalid float value: '%s'\n", script_prog,
                        name, value);
                return -1;
            }
        }
        return 0;
    }
    return set_known(args, groups, name, value, used_value);
}

int script_parse_args(ct_args *args, int argc, char **argv, const script_option *table,
                      size_t n, void *values, const char *const *groups,
                      void (*usage)(void))
{
    ct_status st;
    n_own = 0;
    own_names[n_own++] = "help";
    own_names[n_own++] = "version";
    for (size_t i = 0; i < n && n_own < sizeof own_names / sizeof *own_names; i++)
        own_names[n_own++] = table[i].name;
    if ((st = ct_args_parse_with_names(args, argc - 1, (const char *const *)argv + 1, own_names,
                                       n_own)) != CT_OK) {
        script_fail("arguments", st);
        return 2;
    }
    for (size_t i = 0; i < ct_args_unparsed_count(args); i++) {
        const char *a = ct_args_unparsed(args, i), *next = ct_args_unparsed(args, i + 1);
        char name[128];
        const char *eq;
        int used;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage();
            return 1;
        }
        if (!strcmp(a, "--version")) { /* argparse's action="version" */
            printf("%s (libcputrain %s)\n", script_prog, ct_version_string());
            return 1;
        }
        if (strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", script_prog, a);
            return 2;
        }
        eq = strchr(a, '=');
        snprintf(name, sizeof name, "%.*s", (int)(eq ? eq - a - 2 : (long)strlen(a + 2)), a + 2);
        for (char *c = name; *c; c++)
            *c = *c == '-' ? '_' : *c;
        if (set_option(table, n, values, groups, args, name, eq ? eq + 1 : next, &used) != 0)
            return 2;
        if (used && !eq)
            i++;
    }
    return 0;
}
