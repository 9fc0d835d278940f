/* What the library logs before this process knows its rank (the
 * arguments' warnings) is held here: every rank parses the same arguments,
 * so only the main process says it, once the rank is known; an exit before
 * then says it on every process, since then there is nothing else to go
 * by. */
#include "script.h"

#include <stdarg.h>
#include <stdio.h>

/* Names in messages; main sets them (script.h). */
const char *script_prog = "cputrain", *script_name = "the script";

enum { HELD = 64 };

static struct {
    int level[HELD];
    char text[HELD][512];
    int n, lost;
} held;

static void hold(ct_log_level level, const char *message, void *user)
{
    (void)user;
    if (held.n == HELD) {
        held.lost++;
        return;
    }
    held.level[held.n] = (int)level;
    snprintf(held.text[held.n++], sizeof held.text[0], "%s", message);
}

void script_hold_log(void)
{
    ct_log_set_callback(hold, NULL);
}

void script_release_log(int say)
{
    ct_log_set_callback(ct_log_to_stderr, NULL);
    for (int i = 0; say && i < held.n; i++)
        if (held.level[i] <= (int)ct_log_get_level())
            ct_log_to_stderr((ct_log_level)held.level[i], held.text[i], NULL);
    if (say && held.lost)
        fprintf(stderr, "%s: (%d more messages)\n", script_prog, held.lost);
    held.n = held.lost = 0;
}

void script_warn(const char *fmt, ...)
{
    char text[1024];
    ct_log_fn fn;
    void *user;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    ct_log_get_callback(&fn, &user);
    if (fn && ct_log_get_level() >= CT_LOG_WARNING)
        fn(CT_LOG_WARNING, text, user);
}

int script_fail(const char *what, ct_status st)
{
    if (held.n)
        script_release_log(1); /* the arguments' warnings first, in order */
    fprintf(stderr, "%s: %s: %s: %s\n", script_prog, what, ct_status_name(st), ct_last_error());
    return 1;
}
