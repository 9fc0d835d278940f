/* --help text for the training arguments, laid out as argparse prints it. */
#include "args/args_priv.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HELP_COLUMN 24
#define LINE_WIDTH 79

static char *help_text;
static pthread_once_t help_once = PTHREAD_ONCE_INIT;

/* Append `text` word-wrapped into the help column. `col` is where the
 * cursor already is. */
static void wrap(ct__strbuf *sb, const char *text, size_t col)
{
    const char *p = text;
    while (*p) {
        const char *w = p;
        size_t n;
        while (*w && *w != ' ')
            w++;
        n = (size_t)(w - p);
        if (col > HELP_COLUMN && col + 1 + n > LINE_WIDTH) {
            ct__sb_printf(sb, "\n%*s", HELP_COLUMN, "");
            col = HELP_COLUMN;
        } else if (col > HELP_COLUMN) {
            ct__sb_puts(sb, " ");
            col++;
        }
        ct__sb_append(sb, p, n);
        col += n;
        p = *w ? w + 1 : w;
    }
    ct__sb_puts(sb, "\n");
}

static void option_line(ct__strbuf *sb, const char *invocation, const char *help)
{
    size_t len = strlen(invocation) + 2;
    ct__sb_printf(sb, "  %s", invocation);
    if (len + 2 > HELP_COLUMN) {
        ct__sb_printf(sb, "\n%*s", HELP_COLUMN, "");
    } else {
        ct__sb_printf(sb, "%*s", (int)(HELP_COLUMN - len), "");
    }
    wrap(sb, help, HELP_COLUMN);
}

static void build_help(void)
{
    ct__strbuf sb = {0};
    size_t f;
    ct__sb_puts(&sb, "TrainingArguments:\n");
    for (f = 0; f < CT_ARGS_NFIELDS; f++) {
        const ct__arg_field *fd = &ct__arg_fields[f];
        char invocation[512], help[1024], metavar[64];
        size_t i;
        for (i = 0; fd->name[i] && i + 1 < sizeof metavar; i++)
            metavar[i] = (char)toupper((unsigned char)fd->name[i]);
        metavar[i] = '\0';
        if (fd->type == CT_ARG_BOOL) {
            snprintf(invocation, sizeof invocation, "--%s [%s]", fd->name, metavar);
        } else if (fd->type == CT_ARG_CHOICE) {
            char choices[256];
            snprintf(choices, sizeof choices, "%s", fd->choices);
            for (i = 0; choices[i]; i++)
                if (choices[i] == '|')
                    choices[i] = ',';
            snprintf(invocation, sizeof invocation, "--%s {%s}", fd->name, choices);
        } else {
            snprintf(invocation, sizeof invocation, "--%s %s", fd->name, metavar);
        }
        snprintf(help, sizeof help, "%s (default: %s)", fd->help, fd->def);
        option_line(&sb, invocation, help);
        if (fd->type == CT_ARG_BOOL && strcmp(fd->def, "True") == 0) {
            snprintf(invocation, sizeof invocation, "--no_%s", fd->name);
            snprintf(help, sizeof help, "Set %s to False.", fd->name);
            option_line(&sb, invocation, help);
        }
    }
#define CT__ALIAS_HELP(alias, target) \
    option_line(&sb, "--" #alias, "Deprecated name of --" #target ".");
    CT_ARGS_ALIASES(CT__ALIAS_HELP)
#undef CT__ALIAS_HELP
    /* The rest of TrainingArguments, each with its fate and the reason. */
    for (int fate = CT_ARG_NO_EFFECT; fate <= CT_ARG_REFUSED; fate++) {
        ct__sb_puts(&sb, fate == CT_ARG_NO_EFFECT
                             ? "\nTrainingArguments accepted with no effect here (a warning says "
                               "why):\n"
                             : "\nTrainingArguments refused (the error says what to do "
                               "instead):\n");
        for (f = 0; f < CT_ARGS_NFATES; f++) {
            const ct__arg_fate_row *r = &ct__arg_fates[f];
            char invocation[128], help[1024];
            if (r->group != CT__GROUP_TRAINING || (int)r->fate != fate)
                continue;
            snprintf(invocation, sizeof invocation, "--%s", r->name);
            snprintf(help, sizeof help, "%s: %s.", fate == CT_ARG_NO_EFFECT ? "No effect" : "Refused",
                     r->reason);
            option_line(&sb, invocation, help);
        }
    }
    help_text = ct__sb_take(&sb);
}

const char *ct_args_help(void)
{
    pthread_once(&help_once, build_help);
    return help_text ? help_text : "(out of memory building the help text)\n";
}
