/* The SVG document of cputrain-plot (see svg.h): a header with the run's
 * name, size and any skipped values, then a grid of panels, each with its
 * frame, "nice" ticks (1, 2 or 5 times a power of ten) and labels, the
 * curve as one polyline, and red marks where non-finite values were left
 * out. Every text from the input is escaped and made valid UTF-8 / XML. */
#include "svg.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

/* Layout, in SVG user units (pixels at 100 %). */
#define PANEL_W 460.0
#define PANEL_H 250.0
#define GAP 20.0
#define MARGIN 20.0
#define HEADER_H 78.0
#define PLOT_LEFT 70.0 /* room for the value labels */
#define PLOT_RIGHT 16.0
#define PLOT_TOP 34.0
#define PLOT_BOTTOM 42.0 /* step labels and the axis name */
/* Up to this many points, each is drawn as a dot with a tooltip. */
#define MAX_DOTS 60
/* Characters of a series name shown in a panel's title. */
#define MAX_NAME_SHOWN 48

static const char *const COLORS[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd",
                                     "#8c564b", "#e377c2", "#17becf", "#7f7f7f"};
#define SKIP_COLOR "#d62728"
#define FONT "font-family=\"sans-serif\""
/* A note after a panel's title, in the title's <text>. */
#define NOTE "dx=\"6\" font-weight=\"normal\" font-size=\"11\""

typedef struct out {
    FILE *f;
    int failed;
} out;

static void put(out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (vfprintf(o->f, fmt, ap) < 0)
        o->failed = 1;
    va_end(ap);
}

/* Length of the well-formed UTF-8 sequence at p (0 when it is not one),
 * and in *allowed whether XML 1.0 may hold its character: tab, newline,
 * CR, U+0020 and up, but not U+FFFE / U+FFFF. */
static size_t utf8_char(const unsigned char *p, int *allowed)
{
    *allowed = 1;
    if (p[0] < 0x80) {
        *allowed = p[0] >= 0x20 || p[0] == '\t' || p[0] == '\n' || p[0] == '\r';
        return 1;
    }
    if (p[0] >= 0xC2 && p[0] <= 0xDF && (p[1] & 0xC0) == 0x80)
        return 2;
    if (p[0] >= 0xE0 && p[0] <= 0xEF && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80) {
        if ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] >= 0xA0))
            return 0;
        *allowed = !(p[0] == 0xEF && p[1] == 0xBF && (p[2] == 0xBE || p[2] == 0xBF));
        return 3;
    }
    if (p[0] >= 0xF0 && p[0] <= 0xF4 && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80 &&
        (p[3] & 0xC0) == 0x80) {
        if ((p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] >= 0x90))
            return 0;
        return 4;
    }
    return 0;
}

/* Text or attribute content: the five XML specials escaped, anything that
 * is not an allowed character (bad UTF-8 from a path, a control character
 * from a \u escape) as U+FFFD; at most `limit` characters, then "…". The
 * reads stop at the NUL, which no continuation byte can be. */
static void put_text(out *o, const char *s, size_t limit)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t shown = 0;
    while (*p) {
        int allowed;
        size_t n = utf8_char(p, &allowed);
        if (shown++ == limit) {
            put(o, "\xE2\x80\xA6");
            return;
        }
        if (n == 0 || !allowed) {
            put(o, "\xEF\xBF\xBD");
            p += n ? n : 1; /* a stray byte, or one whole character */
            continue;
        }
        switch (*p) {
        case '&': put(o, "&amp;"); break;
        case '<': put(o, "&lt;"); break;
        case '>': put(o, "&gt;"); break;
        case '"': put(o, "&quot;"); break;
        case '\'': put(o, "&apos;"); break;
        /* Kept in attributes, which would normalise them to spaces. */
        case '\t': put(o, "&#9;"); break;
        case '\n': put(o, "&#10;"); break;
        case '\r': put(o, "&#13;"); break;
        default: put(o, "%.*s", (int)n, (const char *)p); break;
        }
        p += n;
    }
}

/* ---- axes ---------------------------------------------------------------- */

typedef struct axis {
    double lo, hi, step; /* the drawn range, a whole number of steps */
    int exponent;        /* labels as 1.5e-05 rather than 0.000015 */
    int digits;          /* digits after the point in the labels */
} axis;

/* 1, 2 or 5 times a power of ten near span / target. */
static double nice_step(double span, double target)
{
    double raw = span / target, mag = pow(10.0, floor(log10(raw))), f = raw / mag;
    return (f < 1.5 ? 1.0 : f < 3.0 ? 2.0 : f < 7.0 ? 5.0 : 10.0) * mag;
}

/* An axis over [lo, hi] (finite, lo <= hi). `integral`: the values are
 * whole numbers (steps), so ticks are too. */
static axis make_axis(double lo, double hi, int integral)
{
    axis a;
    double big = fmax(fabs(lo), fabs(hi));
    /* Beyond this, hi - lo could overflow; such values are clipped. */
    lo = fmin(fmax(lo, -1e300), 1e300);
    hi = fmin(fmax(hi, -1e300), 1e300);
    if (!(hi - lo > big * 1e-12) || hi - lo < 1e-300) {
        double d = fabs(lo) > 1e-300 ? fabs(lo) * 0.1 : 1.0;
        if (integral && d < 1.0)
            d = 1.0;
        lo -= d;
        hi += d;
    }
    a.step = nice_step(hi - lo, 5.0);
    if (integral && a.step < 1.0)
        a.step = 1.0;
    a.lo = floor(lo / a.step) * a.step;
    a.hi = ceil(hi / a.step) * a.step;
    if (!(a.hi > a.lo)) /* rounding at extreme magnitudes */
        a.hi = a.lo + a.step;
    if (!isfinite(a.lo) || !isfinite(a.hi) || !(a.step > 0.0) || !(a.hi > a.lo)) {
        a.lo = -1.0; /* unreachable for clipped input; a sane frame anyway */
        a.hi = a.step = 1.0;
    }
    big = fmax(fabs(a.lo), fabs(a.hi));
    /* Plain decimals in the usual range, else d.ddde-05: as many digits as
     * tell two neighbouring ticks apart. */
    a.exponent = big >= 1e6 || big < 1e-3;
    a.digits = a.exponent ? (int)(floor(log10(big)) - floor(log10(a.step)))
                          : (int)-floor(log10(a.step));
    a.digits = a.digits < 0 ? 0 : a.digits > 16 ? 16 : a.digits;
    return a;
}

/* Where v falls in [0, 1] along the axis, clipped. */
static double axis_pos(const axis *a, double v)
{
    double t = (v - a->lo) / (a->hi - a->lo);
    return isnan(t) ? 0.5 : t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t;
}

/* The k-th tick, with the rounding noise of k * step taken out near 0. */
static double axis_tick(const axis *a, int k)
{
    double t = a->lo + k * a->step;
    return fabs(t) < a->step * 1e-9 ? 0.0 : t;
}

static int axis_ticks(const axis *a)
{
    double n = floor((a->hi - a->lo) / a->step + 0.5);
    return n < 1.0 ? 2 : n > 20.0 ? 21 : (int)n + 1;
}

static void put_tick_label(out *o, const axis *a, double v)
{
    if (v == 0.0)
        put(o, "0");
    else
        put(o, a->exponent ? "%.*e" : "%.*f", a->digits, v);
}

/* ---- panels -------------------------------------------------------------- */

typedef struct frame {
    double x0, y0, w, h; /* the plot area inside a panel, in panel units */
} frame;

static double px(const frame *fr, const axis *xa, double step)
{
    return fr->x0 + axis_pos(xa, step) * fr->w;
}

static double py(const frame *fr, const axis *ya, double v)
{
    return fr->y0 + fr->h - axis_pos(ya, v) * fr->h;
}

static void put_point_title(out *o, const char *name, const plot_point *p, const char *value)
{
    put(o, "<title>step %.15g", p->step);
    if (!isnan(p->epoch))
        put(o, " (epoch %.4g)", p->epoch);
    put(o, ": ");
    put_text(o, name, MAX_NAME_SHOWN);
    if (value != NULL)
        put(o, " = %s", value);
    else
        put(o, " = %.6g", p->value);
    put(o, "</title>");
}

static void put_axes(out *o, const frame *fr, const axis *xa, const axis *ya)
{
    int n = axis_ticks(ya);
    put(o, "<g class=\"y-axis\" stroke=\"#e3e3e3\" stroke-width=\"1\">\n");
    for (int k = 0; k < n; k++) {
        double y = py(fr, ya, axis_tick(ya, k));
        put(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", fr->x0, y,
            fr->x0 + fr->w, y);
    }
    put(o, "</g>\n<g class=\"y-labels\" " FONT " font-size=\"11\" fill=\"#444\" "
           "text-anchor=\"end\">\n");
    for (int k = 0; k < n; k++) {
        put(o, "<text x=\"%.1f\" y=\"%.1f\">", fr->x0 - 6, py(fr, ya, axis_tick(ya, k)) + 4);
        put_tick_label(o, ya, axis_tick(ya, k));
        put(o, "</text>\n");
    }
    n = axis_ticks(xa);
    put(o, "</g>\n<g class=\"x-axis\" stroke=\"#999\" stroke-width=\"1\">\n");
    for (int k = 0; k < n; k++) {
        double x = px(fr, xa, axis_tick(xa, k));
        put(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x, fr->y0 + fr->h, x,
            fr->y0 + fr->h + 4);
    }
    put(o, "</g>\n<g class=\"x-labels\" " FONT " font-size=\"11\" fill=\"#444\" "
           "text-anchor=\"middle\">\n");
    for (int k = 0; k < n; k++) {
        put(o, "<text x=\"%.1f\" y=\"%.1f\">", px(fr, xa, axis_tick(xa, k)), fr->y0 + fr->h + 16);
        put_tick_label(o, xa, axis_tick(xa, k));
        put(o, "</text>\n");
    }
    put(o, "</g>\n<text " FONT " font-size=\"11\" fill=\"#444\" text-anchor=\"middle\" "
           "x=\"%.1f\" y=\"%.1f\">step</text>\n",
        fr->x0 + fr->w / 2, fr->y0 + fr->h + 32);
    put(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
           "stroke=\"#999\" stroke-width=\"1\"/>\n",
        fr->x0, fr->y0, fr->w, fr->h);
}

static void put_panel(out *o, const plot_series *s, size_t index, double x, double y,
                      const axis *xa)
{
    const char *color = COLORS[index % (sizeof COLORS / sizeof COLORS[0])];
    frame fr = {PLOT_LEFT, PLOT_TOP, PANEL_W - PLOT_LEFT - PLOT_RIGHT,
                PANEL_H - PLOT_TOP - PLOT_BOTTOM};
    double lo = INFINITY, hi = -INFINITY;
    axis ya;

    for (size_t i = 0; i < s->count; i++) {
        lo = fmin(lo, s->points[i].value);
        hi = fmax(hi, s->points[i].value);
    }
    if (s->count == 0)
        lo = 0.0, hi = 1.0;
    ya = make_axis(lo, hi, 0);

    put(o, "<g class=\"panel\" data-series=\"");
    put_text(o, s->name, (size_t)-1);
    put(o, "\" transform=\"translate(%.1f,%.1f)\">\n", x, y);
    put(o, "<rect width=\"%.1f\" height=\"%.1f\" rx=\"4\" fill=\"#fff\" stroke=\"#ccc\"/>\n",
        PANEL_W, PANEL_H);
    put(o, "<text class=\"panel-title\" " FONT " font-size=\"14\" font-weight=\"bold\" "
           "x=\"%.1f\" y=\"22\" fill=\"#222\">",
        PLOT_LEFT);
    put_text(o, s->name, MAX_NAME_SHOWN);
    put(o, "<tspan " NOTE " fill=\"#666\">(%zu value%s)</tspan>", s->count,
        s->count == 1 ? "" : "s");
    if (s->nskipped > 0)
        put(o, "<tspan " NOTE " fill=\"" SKIP_COLOR "\">%zu non-finite skipped</tspan>",
            s->nskipped);
    put(o, "</text>\n");
    put_axes(o, &fr, xa, &ya);

    if (s->count == 0) {
        put(o, "<text " FONT " font-size=\"13\" fill=\"" SKIP_COLOR "\" text-anchor=\"middle\" "
               "x=\"%.1f\" y=\"%.1f\">no finite value to draw</text>\n",
            fr.x0 + fr.w / 2, fr.y0 + fr.h / 2);
    } else {
        put(o, "<polyline class=\"series\" data-series=\"");
        put_text(o, s->name, (size_t)-1);
        put(o, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" stroke-linejoin=\"round\" "
               "points=\"",
            color);
        for (size_t i = 0; i < s->count; i++)
            put(o, "%s%.2f,%.2f", i ? " " : "", px(&fr, xa, s->points[i].step),
                py(&fr, &ya, s->points[i].value));
        put(o, "\"/>\n");
    }
    if (s->count > 0 && (s->count <= MAX_DOTS || s->count == 1)) {
        put(o, "<g class=\"dots\" fill=\"%s\">\n", color);
        for (size_t i = 0; i < s->count; i++) {
            put(o, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"2.5\">", px(&fr, xa, s->points[i].step),
                py(&fr, &ya, s->points[i].value));
            put_point_title(o, s->name, &s->points[i], NULL);
            put(o, "</circle>\n");
        }
        put(o, "</g>\n");
    }
    /* A red tick up from the axis at each step whose value was skipped. */
    if (s->nskipped > 0) {
        put(o, "<g class=\"skipped\" stroke=\"" SKIP_COLOR "\" stroke-width=\"2\">\n");
        for (size_t i = 0; i < s->nskipped; i++) {
            const plot_point *p = &s->skipped[i];
            double sx = px(&fr, xa, p->step);
            put(o, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\">", sx, fr.y0 + fr.h, sx,
                fr.y0 + fr.h - 10);
            put_point_title(o, s->name, p,
                            isnan(p->value) ? "NaN (skipped)"
                            : p->value > 0  ? "Infinity (skipped)"
                                            : "-Infinity (skipped)");
            put(o, "</line>\n");
        }
        put(o, "</g>\n");
    }
    put(o, "</g>\n");
}

/* ---- document ------------------------------------------------------------ */

static int all_integral(const plot_history *h)
{
    for (size_t i = 0; i < h->count; i++) {
        for (size_t j = 0; j < h->series[i].count; j++)
            if (floor(h->series[i].points[j].step) != h->series[i].points[j].step)
                return 0;
        for (size_t j = 0; j < h->series[i].nskipped; j++)
            if (floor(h->series[i].skipped[j].step) != h->series[i].skipped[j].step)
                return 0;
    }
    return 1;
}

/* "3 non-finite values skipped (loss 2, grad_norm 1)" */
static void put_skipped_note(out *o, const plot_history *h)
{
    size_t total = plot_history_skipped(h);
    int first = 1;
    put(o, "%zu non-finite value%s (NaN or Infinity) skipped: ", total, total == 1 ? "" : "s");
    for (size_t i = 0; i < h->count; i++) {
        if (h->series[i].nskipped == 0)
            continue;
        put(o, first ? "" : ", ");
        put_text(o, h->series[i].name, MAX_NAME_SHOWN);
        put(o, " %zu", h->series[i].nskipped);
        first = 0;
    }
}

int plot_svg_write(FILE *f, const plot_history *h, const char *source)
{
    out o = {f, 0};
    size_t cols = h->count > 1 ? 2 : 1, rows = (h->count + cols - 1) / cols;
    double width = 2 * MARGIN + cols * PANEL_W + (cols - 1) * GAP;
    double height = HEADER_H + rows * PANEL_H + (rows - 1) * GAP + MARGIN;
    size_t skipped = plot_history_skipped(h);
    /* Steps from 0, where the run began, unless the log says otherwise. */
    axis xa = make_axis(fmin(h->first_step, 0.0), h->last_step, all_integral(h));

    put(&o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    put(&o, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
            "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n",
        width, height, width, height);
    put(&o, "<title>Training curves: ");
    put_text(&o, source, (size_t)-1);
    if (skipped > 0) {
        put(&o, " (");
        put_skipped_note(&o, h);
        put(&o, ")");
    }
    put(&o, "</title>\n");
    put(&o, "<desc>Written by cputrain-plot from trainer_state.json's log_history: one "
            "panel per series against the optimizer step.</desc>\n");
    put(&o, "<rect width=\"100%%\" height=\"100%%\" fill=\"#f7f7f7\"/>\n");
    put(&o, "<text class=\"title\" " FONT " font-size=\"18\" font-weight=\"bold\" fill=\"#222\" "
            "x=\"%.1f\" y=\"%.1f\">Training curves: ",
        MARGIN, MARGIN + 12);
    put_text(&o, source, 80);
    put(&o, "</text>\n<text class=\"subtitle\" " FONT " font-size=\"12\" fill=\"#555\" "
            "x=\"%.1f\" y=\"%.1f\">%zu log entr%s, steps %.15g to %.15g",
        MARGIN, MARGIN + 32, h->entries, h->entries == 1 ? "y" : "ies", h->first_step,
        h->last_step);
    if (!isnan(h->last_epoch))
        put(&o, ", up to epoch %.4g", h->last_epoch);
    put(&o, "</text>\n");
    put(&o, "<text class=\"legend\" " FONT " font-size=\"12\" fill=\"%s\" x=\"%.1f\" y=\"%.1f\">",
        skipped ? SKIP_COLOR : "#555", MARGIN, MARGIN + 50);
    if (skipped > 0) {
        put_skipped_note(&o, h);
        put(&o, "; red marks show their steps");
    } else {
        put(&o, "every logged value is finite");
    }
    put(&o, "</text>\n");

    for (size_t i = 0; i < h->count; i++) {
        double x = MARGIN + (double)(i % cols) * (PANEL_W + GAP);
        double y = HEADER_H + (double)(i / cols) * (PANEL_H + GAP);
        put_panel(&o, &h->series[i], i, x, y, &xa);
    }
    put(&o, "</svg>\n");
    return o.failed ? -1 : 0;
}
