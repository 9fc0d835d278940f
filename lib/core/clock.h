/* Internal: the monotonic clock in seconds, which every bounded wait of the
 * library measures its deadline on. */
#ifndef CT_CORE_CLOCK_H
#define CT_CORE_CLOCK_H

#include <time.h>

static inline double ct__now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* poll()'s timeout until `deadline` (ct__now_s's clock): 0 once it has
 * passed, rounded up to the next millisecond, and held below INT_MAX (a
 * deadline weeks away would overflow int, and a negative timeout waits
 * for ever). */
static inline int ct__poll_ms(double deadline)
{
    double left = deadline - ct__now_s();
    if (left <= 0)
        return 0;
    if (left > 1e6)
        return 1000000000;
    return (int)(left * 1000.0) + 1;
}

#endif
