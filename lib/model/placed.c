/* ct_model_set_placement: a local rank's placement (machine/placement.c)
 * applied to a model — its thread pool, its buffers' NUMA node — and the
 * later check that the threads still run where they were placed. */
#include <sched.h>
#include <stdio.h>

#include <cputrain/cputrain.h>

#include "core/error.h"
#include "machine/placement.h"
#include "model/acts.h"
#include "model/model.h"

ct_status ct_model_set_placement(ct_model *model, ct_placement *placement)
{
    ct_model *m = model;
    ct__pool *pool;
    ct_status st;
    CT__CHECK_ARG(model);
    CT__CHECK_ARG(placement);
    if ((st = ct__placement_pool(placement, &pool)) != CT_OK)
        return st;
    if (sched_getaffinity(0, sizeof m->placed_cpus, &m->placed_cpus) != 0)
        CPU_ZERO(&m->placed_cpus); /* nothing to compare with later */
    ct__pool_free(m->pool);
    m->pool = pool;
    m->threads = ct_placement_threads(placement);
    ct__placement_bind(placement, m->params, m->n_floats * sizeof(float));
    ct__placement_bind(placement, m->grads, m->n_floats * sizeof(float));
    if (m->wpack_mem != NULL)
        ct__placement_bind(placement, m->wpack_mem, m->wpack_bytes);
    if (m->acts != NULL)
        ct__placement_bind(placement, m->acts->block, m->acts->bytes);
    m->placed = 1;
    m->numa_node = ct_placement_numa_node(placement);
    ct__placement_applied(placement);
    return CT_OK;
}

/* "0-3,8": the CPUs of a set, as Linux lists them. */
static void cpu_list(const cpu_set_t *set, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE && used < size; c++) {
        int last = c;
        if (!CPU_ISSET(c, set))
            continue;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set))
            last++;
        used += (size_t)snprintf(buf + used, size - used, last > c ? "%s%d-%d" : "%s%d",
                                 used ? "," : "", c, last);
        c = last;
    }
}

void ct__model_recheck_placement(const ct_model *m)
{
    cpu_set_t now;
    char planned[256], actual[256];
    if (!m->placed || CPU_COUNT(&m->placed_cpus) == 0 ||
        sched_getaffinity(0, sizeof now, &now) != 0 || CPU_EQUAL(&now, &m->placed_cpus))
        return;
    cpu_list(&m->placed_cpus, planned, sizeof planned);
    cpu_list(&now, actual, sizeof actual);
    ct__log(CT_LOG_WARNING,
            "placement: the thread running the model's parallel loops is bound to CPUs %s, not "
            "%s as placed (something in the process changed its affinity after start-up, or "
            "it is not the thread that called ct_model_set_placement)", actual, planned);
}
