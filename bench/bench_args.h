/* The benches' command-line numbers, read strictly: a count or a shape that
 * does not parse whole, or lies outside its range, ends the program with
 * status 2 and a line naming it, instead of running as 0 (atoi's answer) or
 * leaving a shape out. The benches are programs, so exiting is theirs to do. */
#ifndef CT_BENCH_ARGS_H
#define CT_BENCH_ARGS_H

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

/* opt's value v as a whole decimal number in [lo, hi]. */
static inline int bench_int(const char *prog, const char *opt, const char *v, int lo, int hi)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi) {
        fprintf(stderr, "%s: %s %s is not a whole number from %d to %d\n", prog, opt, v, lo, hi);
        exit(2);
    }
    return (int)x;
}

/* "MxNxK", each a positive int, into s[3]. */
static inline void bench_shape(const char *prog, const char *v, int s[3])
{
    char tail;
    if (sscanf(v, "%dx%dx%d%c", &s[0], &s[1], &s[2], &tail) != 3 || s[0] < 1 || s[1] < 1 ||
        s[2] < 1) {
        fprintf(stderr, "%s: -s %s is not a shape MxNxK of positive sizes\n", prog, v);
        exit(2);
    }
}

#endif
