/* ct_progress_to_terminal: the ready-made progress callback, a one-line bar
 * on stderr like tqdm's and log entries on stdout like Trainer's printer.
 * Only programs that install it get any output. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "core/clock.h"
#include "train/trainer.h"

/* One training at a time draws a bar; the state lives here. */
static double started;
static int64_t first_step;
static char last_loss[32];
static int bar_drawn;

static void format_time(char *buf, size_t size, double seconds)
{
    long s = isfinite(seconds) && seconds >= 0 ? (long)(seconds + 0.5) : 0;
    if (s >= 3600)
        snprintf(buf, size, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else
        snprintf(buf, size, "%02ld:%02ld", s / 60, s % 60);
}

static void draw(int64_t step, int64_t max_steps)
{
    double elapsed = ct__now_s() - started;
    double rate = step > first_step ? (double)(step - first_step) / elapsed : 0;
    double eta = rate > 0 ? (double)(max_steps - step) / rate : NAN;
    int width = 30, filled = max_steps > 0 ? (int)(width * step / max_steps) : 0;
    char bar[64], spent[48], left[48];
    for (int i = 0; i < width; i++)
        bar[i] = i < filled ? '#' : ' ';
    bar[width] = '\0';
    format_time(spent, sizeof spent, elapsed);
    format_time(left, sizeof left, eta);
    fprintf(stderr, "\r%3d%%|%s| %lld/%lld [%s<%s, %.2f it/s%s%s]\033[K",
            max_steps > 0 ? (int)(100 * step / max_steps) : 0, bar, (long long)step,
            (long long)max_steps, spent, rate > 0 ? left : "?", rate, last_loss[0] ? ", loss=" : "",
            last_loss);
    fflush(stderr);
    bar_drawn = 1;
}

int ct_progress_to_terminal(void *user, ct_event event, int64_t step, int64_t max_steps,
                            double epoch, const char *log_json)
{
    const ct_args *args = user;
    int show_bar = isatty(STDERR_FILENO);
    (void)epoch;
    if (args) {
        int disabled = 0;
        ct_args_get_bool(args, "disable_tqdm", &disabled);
        show_bar = show_bar && !disabled;
    }
    switch (event) {
    case CT_EVENT_TRAIN_BEGIN:
        started = ct__now_s();
        first_step = step;
        last_loss[0] = '\0';
        bar_drawn = 0;
        break;
    case CT_EVENT_STEP_END:
        if (show_bar)
            draw(step, max_steps);
        break;
    case CT_EVENT_LOG:
    case CT_EVENT_EVALUATE:
        if (log_json) {
            const char *loss = strstr(log_json, "\"loss\": ");
            if (loss)
                snprintf(last_loss, sizeof last_loss, "%.*s",
                         (int)strcspn(loss + 8, ",}"), loss + 8);
            if (bar_drawn)
                fputs("\r\033[K", stderr);
            printf("%s\n", log_json);
            fflush(stdout);
            if (show_bar)
                draw(step, max_steps);
        }
        break;
    case CT_EVENT_TRAIN_END:
        if (bar_drawn)
            fputs("\n", stderr);
        bar_drawn = 0;
        break;
    default:
        break;
    }
    return 0;
}
