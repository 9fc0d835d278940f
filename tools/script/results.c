/* What an example script reports after training: the epoch it ended at,
 * and metrics printed as Trainer.log_metrics prints them. */
#include "script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double script_last_epoch(const ct_trainer *t)
{
    const char *h = t ? ct_trainer_log_history(t) : NULL;
    const char *e = h ? strstr(h, "\"epoch\": ") : NULL;
    while (e && strstr(e + 1, "\"epoch\": "))
        e = strstr(e + 1, "\"epoch\": ");
    return e ? strtod(e + 9, NULL) : 0.0;
}

void script_print_metrics(const char *split, const char *const *names, const double *values,
                          size_t n)
{
    printf("***** %s metrics *****\n", split);
    for (size_t i = 0; i < n; i++)
        printf("  %-24s = %g\n", names[i], values[i]);
}
