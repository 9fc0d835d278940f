/* ct_placement: one local rank's plan (topology.c) as a public handle, and
 * ct_model_set_placement, which applies it to a model's thread pool and
 * buffers and keeps what the threads' affinity reads back as. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cputrain/cputrain.h>

#include "core/error.h"
#include "core/strbuf.h"
#include "core/threadpool.h"
#include "dist/topology.h"
#include "model/acts.h"
#include "model/model.h"

/* What one thread of the plan did when the placement was applied, written
 * by that thread (pinning and read-back only mean something there). */
typedef struct thread_state {
    ct_status pin;   /* ct__pin_current_thread */
    ct_status check; /* ct__pin_check, when pinned */
    ct__pin_report rep;
    char error[256]; /* the thread's ct_last_error() when either failed */
} thread_state;

struct ct_placement {
    ct__topology *topo;
    ct__rank_plan plan;
    thread_state *threads; /* plan.nthreads */
    int applied;           /* ct_model_set_placement succeeded */
    ct_status process_check;
    ct__pin_report process;
    char *text; /* ct_placement_describe's */
};

ct_status ct_placement_create(const char *topology, int local_rank, int local_world_size,
                              int threads, ct_placement **out)
{
    ct_placement *p;
    ct_status st;
    int bound;
    CT__CHECK_ARG(out);
    *out = NULL;
    /* Before loading the topology, which takes a while on a big machine. */
    if (local_world_size < 1 || local_rank < 0 || local_rank >= local_world_size)
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_placement_create: local rank %d is outside [0, local world size %d)",
                         local_rank, local_world_size);
    if (threads < 0)
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_placement_create: threads %d is negative (0: OMP_NUM_THREADS, "
                         "else one per core of the share)",
                         threads);
    if ((p = calloc(1, sizeof *p)) == NULL)
        return ct__error(CT_ERR_NOMEM, "ct_placement_create: out of memory");
    if ((st = ct__topology_load(topology, &p->topo)) != CT_OK) {
        ct_placement_free(p);
        return st;
    }
    /* A launcher that bound the process (mpirun --bind-to socket, numactl)
     * has already given this rank its share: plan inside it, rather than
     * split it again among ranks that are not in it. */
    bound = ct__topology_bound_at_start(p->topo) && local_world_size > 1;
    if (bound)
        ct__log(CT_LOG_INFO, "local rank %d: the process was started bound to %d of the "
                             "machine's cores; its threads stay within them",
                local_rank, ct__topology_ncores(p->topo));
    if ((st = ct__pin_plan(p->topo, bound ? 0 : local_rank, bound ? 1 : local_world_size,
                           threads, &p->plan)) != CT_OK) {
        ct_placement_free(p);
        return st;
    }
    p->plan.local_rank = local_rank; /* named as itself in describe */
    p->plan.local_world = local_world_size;
    if ((p->threads = calloc((size_t)p->plan.nthreads, sizeof *p->threads)) == NULL) {
        ct_placement_free(p);
        return ct__error(CT_ERR_NOMEM, "ct_placement_create: out of memory");
    }
    *out = p;
    return CT_OK;
}

void ct_placement_free(ct_placement *p)
{
    if (p == NULL)
        return;
    ct__pin_plan_free(&p->plan);
    ct__topology_free(p->topo);
    free(p->threads);
    free(p->text);
    free(p);
}

int ct_placement_threads(const ct_placement *p)
{
    return p != NULL ? p->plan.nthreads : 0;
}

int ct_placement_numa_node(const ct_placement *p)
{
    return p != NULL ? p->plan.node_os_index : -1;
}

int ct_placement_thread_cpus(const ct_placement *p, int thread, int *out, int max)
{
    if (p == NULL || thread < 0 || thread >= p->plan.nthreads)
        return -1;
    return ct__topology_core_pus(p->topo, p->plan.thread_core[thread], out, max < 0 ? 0 : max);
}

/* ---- describe ------------------------------------------------------------- */

static const char *state_name(ct__pin_state s)
{
    return s == CT__PIN_NARROWED ? "narrowed" : "changed";
}

/* "applied: thread 0 PUs 0, thread 1 PUs 1 (as planned)", or with what
 * differs and a closing warning. */
static void describe_applied(const ct_placement *p, ct__strbuf *sb)
{
    int off = 0; /* threads not bound as planned */
    ct__sb_puts(sb, "\napplied:");
    for (int t = 0; t < p->plan.nthreads; t++) {
        const thread_state *s = &p->threads[t];
        ct__sb_printf(sb, "%s thread %d PUs ", t > 0 ? "," : "", t);
        if (s->pin != CT_OK || s->check != CT_OK) {
            ct__sb_printf(sb, "unknown (%s)", s->error);
            off++;
        } else if (s->rep.state != CT__PIN_EXACT) {
            ct__sb_printf(sb, "%s (expected %s: %s)", s->rep.applied, s->rep.expected,
                          state_name(s->rep.state));
            off++;
        } else {
            ct__sb_puts(sb, s->rep.applied);
        }
    }
    if (p->process_check == CT_OK && p->process.state != CT__PIN_EXACT)
        ct__sb_printf(sb, "; process PUs %s (expected to cover %s: %s)", p->process.applied,
                      p->process.expected, state_name(p->process.state));
    if (off == 0 && (p->process_check != CT_OK || p->process.state == CT__PIN_EXACT))
        ct__sb_puts(sb, " (as planned)");
    else if (off > 0)
        ct__sb_printf(sb, "; warning: %d of %d threads not bound as planned", off,
                      p->plan.nthreads);
    else
        ct__sb_puts(sb, "; warning: the process's affinity changed after the threads were bound");
}

const char *ct_placement_describe(ct_placement *p)
{
    ct__strbuf sb = {0};
    size_t n;
    char *line;
    if (p == NULL)
        return "";
    n = ct__pin_plan_describe(p->topo, &p->plan, NULL, 0);
    if ((line = malloc(n + 1)) == NULL)
        return "(out of memory)";
    ct__pin_plan_describe(p->topo, &p->plan, line, n + 1);
    ct__sb_puts(&sb, line);
    free(line);
    if (p->applied)
        describe_applied(p, &sb);
    if (sb.failed) {
        ct__sb_free(&sb);
        return "(out of memory)";
    }
    free(p->text);
    p->text = ct__sb_take(&sb);
    return p->text;
}

/* ---- applying it to a model ------------------------------------------------ */

/* Pins thread t and reads its binding back, in that thread; the error text
 * is copied because ct_last_error() belongs to the thread. */
static void pin_and_check(ct_placement *p, int t)
{
    thread_state *s = &p->threads[t];
    memset(s, 0, sizeof *s);
    s->pin = ct__pin_current_thread(p->topo, &p->plan, t);
    if (s->pin == CT_OK)
        s->check = ct__pin_check(p->topo, &p->plan, t, &s->rep);
    if (s->pin != CT_OK || s->check != CT_OK)
        snprintf(s->error, sizeof s->error, "%s", ct_last_error());
}

/* The pool's on_start, in worker thread t (1 .. nthreads-1). */
static void pin_worker(void *user, int t)
{
    pin_and_check(user, t);
}

ct_status ct_model_set_placement(ct_model *model, ct_placement *placement)
{
    ct_model *m = model;
    ct_placement *p = placement;
    ct__pool *pool;
    ct_status st;
    int n;
    CT__CHECK_ARG(model);
    CT__CHECK_ARG(placement);
    n = p->plan.nthreads;
    if (!p->plan.this_system || !ct__topology_is_this_system(p->topo))
        return ct__error(CT_ERR_UNSUPPORTED,
                         "ct_model_set_placement: the placement of local rank %d was planned "
                         "for a described machine (synthetic or XML), not this one",
                         p->plan.local_rank);
    p->applied = 0;

    /* Workers pin themselves before the pool is handed back; the model
     * keeps its old pool until every thread, the caller last, is bound. */
    if ((st = ct__pool_create_ex(n, pin_worker, p, &pool)) != CT_OK)
        return st;
    for (int t = 1; t < n; t++)
        if (p->threads[t].pin != CT_OK) {
            st = ct__error(p->threads[t].pin, "ct_model_set_placement: %s", p->threads[t].error);
            ct__pool_free(pool);
            return st;
        }
    pin_and_check(p, 0);
    if (p->threads[0].pin != CT_OK) {
        ct__pool_free(pool);
        return ct__error(p->threads[0].pin, "ct_model_set_placement: %s", p->threads[0].error);
    }
    if (sched_getaffinity(0, sizeof m->placed_cpus, &m->placed_cpus) != 0)
        CPU_ZERO(&m->placed_cpus); /* nothing to compare with later */
    ct__pool_free(m->pool);
    m->pool = pool;
    m->threads = n;

    /* Only the threads' cores are expected to be covered: fewer threads
     * than cores leaves the rest of the share unused, not narrowed. */
    {
        ct__rank_plan used = p->plan;
        used.cores = p->plan.thread_core;
        used.ncores = n;
        p->process_check = ct__pin_check_process(p->topo, &used, &p->process);
    }

    ct__node_bind(&p->plan, m->params, m->n_floats * sizeof(float));
    ct__node_bind(&p->plan, m->grads, m->n_floats * sizeof(float));
    if (m->wpack_mem != NULL)
        ct__node_bind(&p->plan, m->wpack_mem, m->wpack_bytes);
    if (m->acts != NULL)
        ct__node_bind(&p->plan, m->acts->block, m->acts->bytes);
    m->placed = 1;
    m->numa_node = p->plan.node_os_index;

    p->applied = 1;
    if (ct__log_enabled(CT_LOG_INFO))
        ct__log(CT_LOG_INFO, "placement: %s", ct_placement_describe(p));
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
