/* cputrain-plot: a picture of a training run. Reads OUTPUT_DIR/
 * trainer_state.json (as the Trainer and cputrain-qa write it) and draws
 * its log_history -- training loss, learning rate, grad norm and the eval
 * metrics, each against the step -- into one self-contained SVG file that
 * a browser opens. The file is read by the library (ct_trainer_state_load,
 * the public API) as untrusted: anything malformed is an error naming the
 * file and the field, and the SVG is written to a temporary name and
 * renamed, so a failure never leaves a partial picture.
 * Exit status: 0 written, 1 unreadable or malformed input or a write
 * failure, 2 bad usage. */
#include "plot/history.h"
#include "plot/svg.h"

#include <cputrain/cputrain.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const USAGE =
    "usage: cputrain-plot [-o FILE] OUTPUT_DIR\n"
    "Draws the training curves of a run from OUTPUT_DIR/trainer_state.json (the\n"
    "output_dir of cputrain-qa, or one of its checkpoint-N folders) into\n"
    "OUTPUT_DIR/training_curves.svg, a self-contained SVG file to open in a browser:\n"
    "one panel each for loss, learning_rate, grad_norm and every eval_* metric in\n"
    "log_history (not eval_runtime and the other timings), against the step.\n"
    "NaN and Infinity values are left out of the curves; the picture says how many\n"
    "and marks their steps in red.\n"
    "  -o FILE     write the picture to FILE instead (replaced as a whole)\n"
    "  -h, --help  show this help\n"
    "Exit status: 0 written, 1 unreadable or malformed trainer_state.json or a\n"
    "write failure, 2 bad usage.\n";

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "cputrain-plot: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(cputrain-plot --help shows the usage)\n");
    return 2;
}

static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir);
    char *s = malloc(n + strlen(name) + 2);
    if (s != NULL)
        sprintf(s, "%s%s%s", dir, n > 0 && dir[n - 1] == '/' ? "" : "/", name);
    return s;
}

/* Write the picture to `path` through a temporary file beside it, renamed
 * over it only once complete; 0, or -1 with the reason in err. */
static int write_svg(const char *path, const plot_history *h, const char *source, char *err,
                     size_t errlen)
{
    char *tmp = malloc(strlen(path) + 16);
    mode_t mask;
    FILE *f;
    int fd, failed;
    if (tmp == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    sprintf(tmp, "%s.tmp-XXXXXX", path);
    if ((fd = mkstemp(tmp)) < 0) {
        snprintf(err, errlen, "cannot create a file beside it: %s", strerror(errno));
        free(tmp);
        return -1;
    }
    /* mkstemp makes it 0600; a picture is as readable as any new file. */
    mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0 || (f = fdopen(fd, "w")) == NULL) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        free(tmp);
        return -1;
    }
    failed = plot_svg_write(f, h, source) != 0 || fflush(f) != 0 || fsync(fileno(f)) != 0;
    if (failed)
        snprintf(err, errlen, "writing %s: %s", tmp, strerror(errno));
    if (fclose(f) != 0 && !failed) {
        failed = 1;
        snprintf(err, errlen, "writing %s: %s", tmp, strerror(errno));
    }
    if (!failed && rename(tmp, path) != 0) {
        failed = 1;
        snprintf(err, errlen, "renaming %s to it: %s", tmp, strerror(errno));
    }
    if (failed)
        unlink(tmp);
    free(tmp);
    return failed ? -1 : 0;
}

/* Read, check, draw; the exit status. */
static int draw(const char *dir, const char *state_path, const char *svg_path)
{
    char err[1024];
    size_t skipped;
    ct_trainer_state *state;
    plot_history h;
    int rc;
    if (state_path == NULL || svg_path == NULL) {
        fprintf(stderr, "cputrain-plot: out of memory\n");
        return 1;
    }
    /* The library's messages name the file ("PATH: cannot open: ...",
     * "malformed JSON: PATH: line L column C: ..."). */
    if (ct_trainer_state_load(dir, &state) != CT_OK) {
        fprintf(stderr, "cputrain-plot: %s\n", ct_last_error());
        return 1;
    }
    rc = plot_history_read(state, state_path, &h, err, sizeof err);
    ct_trainer_state_free(state);
    if (rc != 0) {
        fprintf(stderr, "cputrain-plot: %s\n", err);
        return 1;
    }
    if (write_svg(svg_path, &h, dir, err, sizeof err) != 0) {
        fprintf(stderr, "cputrain-plot: %s: %s\n", svg_path, err);
        plot_history_free(&h);
        return 1;
    }
    skipped = plot_history_skipped(&h);
    printf("cputrain-plot: wrote %s: %zu series from %zu log entries", svg_path, h.count,
           h.entries);
    if (skipped > 0)
        printf(", %zu non-finite value%s skipped", skipped, skipped == 1 ? "" : "s");
    printf("\n");
    if (skipped > 0)
        fprintf(stderr, "cputrain-plot: %s: %zu NaN or Infinity value%s left out of the "
                        "curves (marked in red)\n",
                state_path, skipped, skipped == 1 ? "" : "s");
    plot_history_free(&h);
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *output = NULL;
    char *state_path, *svg_path;
    int options_done = 0, status;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!options_done && (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)) {
            fputs(USAGE, stdout);
            return 0;
        } else if (!options_done && strcmp(a, "-o") == 0) {
            if (i + 1 == argc)
                return usage_error("%s needs a file name", a);
            if (output != NULL)
                return usage_error("%s given twice", a);
            output = argv[++i];
            if (*output == '\0')
                return usage_error("%s: the file name is empty", "-o");
        } else if (!options_done && strcmp(a, "--") == 0) {
            options_done = 1;
        } else if (!options_done && a[0] == '-' && a[1] != '\0') {
            return usage_error("unknown option %s", a);
        } else if (dir != NULL) {
            return usage_error("one OUTPUT_DIR only; '%s' is a second", a);
        } else {
            dir = a;
        }
    }
    if (dir == NULL)
        return usage_error("%s", "which OUTPUT_DIR? (the folder with trainer_state.json)");
    if (*dir == '\0')
        return usage_error("%s", "OUTPUT_DIR is empty");

    state_path = join(dir, "trainer_state.json");
    svg_path = output ? strdup(output) : join(dir, "training_curves.svg");
    status = draw(dir, state_path, svg_path);
    free(state_path);
    free(svg_path);
    return status;
}
