/* ct_placement: one local rank's plan (topology.c) as a public handle: its
 * pinned thread pool and node binding for whoever applies it (a model,
 * model/placed.c), and what the threads' affinity reads back as. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cputrain/cputrain.h>

#include "core/error.h"
#include "core/strbuf.h"
#include "machine/placement.h"
#include "machine/topology.h"

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
    int applied;           /* its pool made and handed over (ct__placement_applied) */
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

ct_status ct__placement_pool(ct_placement *p, ct__pool **out)
{
    ct__pool *pool;
    ct_status st;
    int n = p->plan.nthreads;
    *out = NULL;
    if (!p->plan.this_system || !ct__topology_is_this_system(p->topo))
        return ct__error(CT_ERR_UNSUPPORTED,
                         "ct_model_set_placement: the placement of local rank %d was planned "
                         "for a described machine (synthetic or XML), not this one",
                         p->plan.local_rank);
    p->applied = 0;
    /* Workers pin themselves before the pool is handed back; the caller
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
    /* Only the threads' cores are expected to be covered: fewer threads
     * than cores leaves the rest of the share unused, not narrowed. */
    {
        ct__rank_plan used = p->plan;
        used.cores = p->plan.thread_core;
        used.ncores = n;
        p->process_check = ct__pin_check_process(p->topo, &used, &p->process);
    }
    *out = pool;
    return CT_OK;
}

void ct__placement_bind(const ct_placement *p, void *mem, size_t bytes)
{
    ct__node_bind(&p->plan, mem, bytes);
}

void ct__placement_applied(ct_placement *p)
{
    p->applied = 1;
    if (ct__log_enabled(CT_LOG_INFO))
        ct__log(CT_LOG_INFO, "placement: %s", ct_placement_describe(p));
}
