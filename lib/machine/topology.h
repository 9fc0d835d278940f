/* Machine topology (hwloc) and the pinning plan of one local rank: which
 * cores its worker threads run on and which NUMA node its memory comes from
 * (libnuma). Internal; the public ct_placement API (placement.h) wraps it.
 *
 * Vocabulary:
 *   core    a physical core with at least one PU this process may use,
 *           numbered 0..ncores-1 in hwloc's logical order (so cores of one
 *           package / NUMA node are contiguous);
 *   PU      a hardware thread, named by its OS index (the Linux CPU number);
 *   node    a NUMA node with at least one usable core, numbered
 *           0..nnodes-1 in logical order (memory-only nodes are left out);
 *   domain  the unit ranks are spread over: the NUMA nodes, or the packages
 *           when there are more packages than NUMA nodes (e.g. a synthetic
 *           "package:2 core:8" has one NUMA node but two sockets).
 *
 * On this machine (NULL description) only the PUs in both hwloc's allowed
 * set (cgroups) and the process's affinity at load time count; cores
 * without such a PU are left out, and a core keeps only its allowed PUs. */
#ifndef CT_MACHINE_TOPOLOGY_H
#define CT_MACHINE_TOPOLOGY_H

#include <stddef.h>

#include <cputrain/cputrain.h>

typedef struct ct__topology ct__topology;

/* NULL: this machine. A string starting with '<' is an XML document, one
 * ending in ".xml" an XML file (as written by lstopo --of xml); anything
 * else an hwloc synthetic description ("package:2 numa:1 core:4 pu:2").
 * A topology from XML or synthetic text describes another machine: plans can
 * be made for it but threads cannot be pinned with it. Errors:
 * CT_ERR_INVALID_ARG (bad synthetic text), CT_ERR_IO / CT_ERR_FORMAT (XML),
 * CT_ERR_UNSUPPORTED (no usable core), CT_ERR_NOMEM. */
ct_status ct__topology_load(const char *synthetic_or_xml_or_NULL, ct__topology **out);
void ct__topology_free(ct__topology *topo); /* accepts NULL */

/* 1 for the machine this process runs on (pinning possible). */
int ct__topology_is_this_system(const ct__topology *topo);
/* 1 when, at load, this process was bound to fewer PUs than it may use: a
 * launcher (mpirun's --bind-to, numactl, taskset) chose its share. */
int ct__topology_bound_at_start(const ct__topology *topo);

/* Counts of usable resources (see above). */
int ct__topology_npackages(const ct__topology *topo);
int ct__topology_nnodes(const ct__topology *topo);
int ct__topology_ncores(const ct__topology *topo);
int ct__topology_npus(const ct__topology *topo);

/* NUMA node `node` (0..nnodes-1): its OS index (what libnuma calls it), its
 * cores' count and its i-th core (a core index, increasing in i). -1 when
 * out of range. */
int ct__topology_node_os_index(const ct__topology *topo, int node);
int ct__topology_node_ncores(const ct__topology *topo, int node);
int ct__topology_node_core(const ct__topology *topo, int node, int i);

/* Core `core` (0..ncores-1): its node, its package (logical index among
 * usable packages), its usable PU count, and its PUs' OS indexes, in
 * increasing order, written to pus[0..max) (returns the count, which may be
 * more than max). -1 when out of range. */
int ct__topology_core_node(const ct__topology *topo, int core);
int ct__topology_core_package(const ct__topology *topo, int core);
int ct__topology_core_pus(const ct__topology *topo, int core, int *pus, int max);

/* The domains ranks are spread over (see above): their count, whether they
 * are packages (1) or NUMA nodes (0), and per domain its cores. */
int ct__topology_ndomains(const ct__topology *topo);
int ct__topology_domains_are_packages(const ct__topology *topo);
int ct__topology_domain_ncores(const ct__topology *topo, int domain);
int ct__topology_domain_core(const ct__topology *topo, int domain, int i);

/* Where the thread count came from. */
typedef enum ct__threads_source {
    CT__THREADS_FROM_API = 0,
    CT__THREADS_FROM_OMP = 1,   /* OMP_NUM_THREADS */
    CT__THREADS_FROM_CORES = 2, /* the share's core count */
} ct__threads_source;

/* The plan of one local rank. Rules (local_world ranks, D domains, C cores):
 *  - local_world < D and D a multiple of it: rank r gets D / local_world
 *    whole domains, [r * D/W, (r+1) * D/W) (so one rank uses the whole
 *    machine; memory on the first of them).
 *  - otherwise local_world <= D, or local_world a multiple of D: rank r gets domain
 *    r mod D; that domain's cores are split evenly, in order, between the
 *    ranks sharing it (rank r is the (r / D)-th of them).
 *  - otherwise: an even split, in order, of all C cores; the rank's memory
 *    node is the node holding most of its cores (the lowest on a tie) and
 *    `domain` is -1 when its cores span domains.
 *  - a share that would be empty (more ranks on a domain, or more ranks,
 *    than cores) is one core instead, shared with other ranks
 *    (`oversubscribed` = 1, a warning logged): running 4 ranks on a 2-core
 *    laptop works, slowly, rather than failing.
 * Threads: requested_threads > 0, else OMP_NUM_THREADS (its first number;
 * an unusable value is ignored with a warning), else the share's cores. More
 * threads than the share's cores is clamped to the cores (one thread per
 * physical core, a warning logged; `threads_requested` keeps the ask).
 * Thread t runs on core thread_core[t]; no two threads share a core. */
typedef struct ct__rank_plan {
    int local_rank, local_world;
    int domain;            /* -1 when the share spans domains */
    int domain_is_package; /* domain counts packages, not NUMA nodes */
    int node;              /* NUMA node (logical, usable) for memory */
    int node_os_index;     /* its OS index, for libnuma */
    int ncores;            /* the share: core indexes, increasing */
    int *cores;
    int nthreads;
    int *thread_core; /* nthreads entries: thread t -> core index */
    int threads_requested;
    ct__threads_source threads_source;
    int oversubscribed; /* the share is a core also given to another rank */
    int this_system;    /* made from this machine's topology */
} ct__rank_plan;

/* Fills *out (free with ct__pin_plan_free). Errors: CT_ERR_INVALID_ARG
 * (local_rank outside [0, local_world), requested_threads < 0), CT_ERR_NOMEM. */
ct_status ct__pin_plan(const ct__topology *topo, int local_rank, int local_world,
                       int requested_threads, ct__rank_plan *out);
void ct__pin_plan_free(ct__rank_plan *plan); /* zeroes it; accepts NULL */

/* One line, e.g. "rank 0 -> node 0 -> cores 0-3 (PUs 0,2,4,6), 4 threads";
 * "package 1 (NUMA node 0)" when domains are packages; "nodes 0-1 (memory
 * on node 0)" for a share spanning nodes. Nodes are named by OS index,
 * packages and cores by logical index, PUs by OS index. Notes for
 * OMP_NUM_THREADS, clamping and
 * oversubscription follow. Truncated to fit; returns the full length (as
 * snprintf). */
size_t ct__pin_plan_describe(const ct__topology *topo, const ct__rank_plan *plan,
                             char *buf, size_t size);

/* Binds the calling thread to the PUs of the core of plan thread
 * `thread_index` (hwloc_set_cpubind, HWLOC_CPUBIND_THREAD). Errors:
 * CT_ERR_INVALID_ARG (index out of range), CT_ERR_UNSUPPORTED (topology not
 * of this machine, or binding unsupported), CT_ERR_INTERNAL (the OS refused,
 * errno text included). */
ct_status ct__pin_current_thread(const ct__topology *topo, const ct__rank_plan *plan,
                                 int thread_index);

typedef enum ct__pin_state {
    CT__PIN_EXACT = 0,    /* applied = expected (process check: covers it) */
    CT__PIN_NARROWED = 1, /* applied a non-empty strict subset of expected */
    CT__PIN_CHANGED = 2,  /* applied has PUs outside expected, or none of them */
} ct__pin_state;

typedef struct ct__pin_report {
    ct__pin_state state;
    char expected[256]; /* PU lists, "0,2,4-7" */
    char applied[256];
} ct__pin_report;

/* Reads the calling thread's binding back (hwloc_get_cpubind,
 * HWLOC_CPUBIND_THREAD) and compares it with the PUs of plan thread
 * `thread_index`; logs a warning unless exact. Errors as
 * ct__pin_current_thread. */
ct_status ct__pin_check(const ct__topology *topo, const ct__rank_plan *plan, int thread_index,
                        ct__pin_report *out);

/* After start-up: the process's affinity now (hwloc_get_cpubind,
 * HWLOC_CPUBIND_PROCESS: the union over its threads) against the share's
 * PUs. EXACT when it still covers them, NARROWED when some are gone
 * (something in the process, e.g. another runtime, restricted it), CHANGED
 * when none is left; a warning is logged unless EXACT. */
ct_status ct__pin_check_process(const ct__topology *topo, const ct__rank_plan *plan,
                                ct__pin_report *out);

/* Large buffers of the rank, on its NUMA node (libnuma numa_alloc_onnode;
 * plain anonymous mmap when libnuma is unavailable or the plan is not of
 * this machine). Page-aligned, zero-filled. NULL on failure (size 0 too).
 * Free with ct__node_free and the same size. */
void *ct__node_alloc(const ct__rank_plan *plan, size_t size);
void ct__node_free(void *ptr, size_t size);

/* Moves an existing buffer's pages to the plan's NUMA node and binds the
 * range there (mbind, MPOL_BIND with MPOL_MF_MOVE), so pages touched later
 * come from that node too: strict, unlike ct__node_alloc's preference,
 * since locality is the point of moving (the price: pages first touched
 * later, such as activations', cannot spill over to another node when this
 * one is full). Only the page-aligned interior is bound: the
 * partial pages at either end may hold other allocations. Best effort, never
 * an error: a no-op on a one-node machine, for a plan not of this machine or
 * without NUMA support; a refusal (a full node, a page shared with another
 * process) is a debug message and the memory stays usable where it is.
 * ct__node_bind_os_index takes the node's OS index, for callers that keep
 * only that (a model remembers it for buffers it allocates later). */
void ct__node_bind(const ct__rank_plan *plan, void *ptr, size_t size);
void ct__node_bind_os_index(int node_os_index, void *ptr, size_t size);

#endif
