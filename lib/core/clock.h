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

#endif
