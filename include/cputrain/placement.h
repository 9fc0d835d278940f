/* libcputrain public API: placement (ct_placement) — which cores a process's
 * worker threads run on and which NUMA node its memory comes from, planned
 * from the machine's topology (hwloc) for one local rank of a job.
 * Included through <cputrain/cputrain.h>; do not include directly. */
#ifndef CPUTRAIN_PLACEMENT_H
#define CPUTRAIN_PLACEMENT_H

#ifndef CT_INSIDE_CPUTRAIN_H
#error "include <cputrain/cputrain.h> instead of <cputrain/placement.h>"
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_placement ct_placement;

/* The plan of local rank `local_rank` of `local_world_size` ranks on one
 * machine: ranks go round robin over the sockets / NUMA nodes (rank r on
 * node r mod nodes; the nodes' cores split evenly between the ranks sharing
 * them; with fewer ranks than nodes, whole nodes each when that divides),
 * else an even split of all the cores; threads one per physical core of the
 * share. topology: NULL for this machine (the cores this process may use),
 * else an hwloc synthetic description ("package:2 numa:1 core:8 pu:2") or
 * an XML file written by lstopo (such a plan can be printed, not applied).
 * threads: > 0 asks for that many (more than the share's cores is clamped
 * to them, with a warning), 0 takes OMP_NUM_THREADS, else the share's
 * cores. Errors: CT_ERR_INVALID_ARG (a rank outside [0, local_world_size),
 * threads < 0, a bad synthetic description), CT_ERR_IO / CT_ERR_FORMAT (the
 * XML), CT_ERR_UNSUPPORTED (no usable core). */
CT_API ct_status ct_placement_create(const char *topology, int local_rank, int local_world_size,
                                     int threads, ct_placement **out);
CT_API void ct_placement_free(ct_placement *placement);

CT_API int ct_placement_threads(const ct_placement *placement);
/* The NUMA node (OS index) the rank's memory comes from. */
CT_API int ct_placement_numa_node(const ct_placement *placement);
/* The Linux CPU numbers (PUs) of the core worker thread `thread` runs on
 * (0 = the thread that calls into the library), in increasing order:
 * written to out[0..max) (out may be NULL when max is 0), the count
 * returned (may exceed max); -1 when `thread` is outside
 * [0, ct_placement_threads). */
CT_API int ct_placement_thread_cpus(const ct_placement *placement, int thread, int *out,
                                    int max);

/* The plan as text, one line: "rank 0 -> node 0 -> cores 0-3 (PUs ...), 4
 * threads" (nodes by OS index, cores by logical index). Once applied, a
 * second line with what each thread's affinity read back as when
 * ct_model_set_placement bound it: "applied: thread 0 PUs 0, thread 1 PUs 2
 * (as planned)", or what differs ("thread 1 PUs 0-3 (expected 2: changed)")
 * and a closing "warning: ...". Owned by the placement, valid until the
 * next call on it. */
CT_API const char *ct_placement_describe(ct_placement *placement);

/* Run `model`'s worker threads as planned: its thread pool is recreated
 * with the plan's thread count, worker t bound to the PUs of core t of the
 * share, and the calling thread (which takes part in every parallel loop)
 * bound to the first; the model's buffers (weights, gradients, the bf16
 * copy, activations, also those allocated later) are moved to the plan's
 * NUMA node, best effort. Affinity is read back: a thread bound elsewhere
 * than planned is a warning in the log and in ct_placement_describe.
 * Call it from the thread that will run the model; threads that thread
 * creates afterwards inherit its one-core binding. The model keeps nothing
 * of the placement, which may be freed right after. A later
 * ct_model_set_threads with another count replaces the bound workers with
 * unbound ones (they inherit the caller's binding): set the placement again
 * instead. Errors: CT_ERR_UNSUPPORTED for a placement made from a
 * description rather than this machine, CT_ERR_INTERNAL / CT_ERR_UNSUPPORTED
 * naming the thread the OS refused to bind (the model is then unchanged). */
CT_API ct_status ct_model_set_placement(ct_model *model, ct_placement *placement);

#ifdef __cplusplus
}
#endif
#endif /* CPUTRAIN_PLACEMENT_H */
