/* cputrain-plot's drawing: the series of a log_history as one SVG document,
 * a small panel per series against the step, sharing one step axis. The
 * document is self-contained: presentation attributes only, a generic font
 * family, no scripts, no links. */
#ifndef CPUTRAIN_PLOT_SVG_H
#define CPUTRAIN_PLOT_SVG_H

#include "history.h"

#include <stdio.h>

/* Write the document to f. `source` names the run in the title (its output
 * folder). Returns 0, or -1 when a write failed (errno set by stdio). */
int plot_svg_write(FILE *f, const plot_history *h, const char *source);

#endif
