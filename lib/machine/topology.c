/* Machine topology (hwloc), the pinning plan of a local rank, thread binding
 * and its read-back, node-local buffers (libnuma's mbind). */
#include "machine/topology.h"

#include <errno.h>
#include <hwloc.h>
#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/error.h"

/* A set of cores: nodes, packages and domains are lists into one array. */
typedef struct group_list {
    int n;
    int *os_index; /* n: OS index (nodes) or logical index (packages) */
    int *off;      /* n + 1: cores of group g are cores[off[g] .. off[g+1]) */
    int *cores;    /* ncores core indexes */
} group_list;

struct ct__topology {
    hwloc_topology_t h;
    int this_system;
    int ncores, npus;
    hwloc_bitmap_t *core_set; /* usable PUs of each core */
    int *core_node, *core_package;
    group_list nodes, packages;
    int domains_are_packages;
    int bound_at_start; /* this process's affinity was narrower than allowed */
};

static void group_free(group_list *g)
{
    free(g->os_index);
    free(g->off);
    free(g->cores);
    memset(g, 0, sizeof *g);
}

/* Builds the lists from key[c] in [0, nkeys) (compact) per core. */
static int group_build(group_list *g, const int *key, int nkeys, const int *os_index,
                       int ncores)
{
    g->n = nkeys;
    g->os_index = malloc(sizeof(int) * (size_t)(nkeys > 0 ? nkeys : 1));
    g->off = calloc((size_t)nkeys + 1, sizeof(int));
    g->cores = malloc(sizeof(int) * (size_t)(ncores > 0 ? ncores : 1));
    if (g->os_index == NULL || g->off == NULL || g->cores == NULL)
        return -1;
    for (int k = 0; k < nkeys; k++)
        g->os_index[k] = os_index[k];
    for (int c = 0; c < ncores; c++)
        g->off[key[c] + 1]++;
    for (int k = 0; k < nkeys; k++)
        g->off[k + 1] += g->off[k];
    int *fill = calloc((size_t)(nkeys > 0 ? nkeys : 1), sizeof(int));
    if (fill == NULL)
        return -1;
    for (int c = 0; c < ncores; c++)
        g->cores[g->off[key[c]] + fill[key[c]]++] = c;
    free(fill);
    return 0;
}

void ct__topology_free(ct__topology *t)
{
    if (t == NULL)
        return;
    if (t->core_set != NULL)
        for (int c = 0; c < t->ncores; c++)
            hwloc_bitmap_free(t->core_set[c]);
    free(t->core_set);
    free(t->core_node);
    free(t->core_package);
    group_free(&t->nodes);
    group_free(&t->packages);
    if (t->h != NULL)
        hwloc_topology_destroy(t->h);
    free(t);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* PUs this process may use: hwloc's allowed set, narrowed on this machine
 * by the process's affinity. */
static hwloc_bitmap_t usable_pus(ct__topology *t)
{
    hwloc_bitmap_t set = hwloc_bitmap_dup(t->this_system
                                              ? hwloc_topology_get_allowed_cpuset(t->h)
                                              : hwloc_topology_get_topology_cpuset(t->h));
    if (set == NULL || !t->this_system)
        return set;
    hwloc_bitmap_t bound = hwloc_bitmap_alloc();
    if (bound == NULL) {
        hwloc_bitmap_free(set);
        return NULL;
    }
    if (hwloc_get_cpubind(t->h, bound, HWLOC_CPUBIND_PROCESS) == 0 && !hwloc_bitmap_iszero(bound)) {
        t->bound_at_start = !hwloc_bitmap_isincluded(set, bound);
        hwloc_bitmap_and(set, set, bound);
    } else {
        cpu_set_t cs;
        if (sched_getaffinity(0, sizeof cs, &cs) == 0) {
            hwloc_bitmap_zero(bound);
            for (int i = 0; i < CPU_SETSIZE; i++)
                if (CPU_ISSET(i, &cs))
                    hwloc_bitmap_set(bound, (unsigned)i);
            hwloc_bitmap_and(set, set, bound);
        }
    }
    hwloc_bitmap_free(bound);
    return set;
}

static ct_status build(ct__topology *t)
{
    hwloc_topology_t h = t->h;
    hwloc_obj_type_t core_type = HWLOC_OBJ_CORE;
    int nobj = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_CORE);
    if (nobj <= 0) { /* no core level (some VMs, synthetic "pu" only): PUs */
        core_type = HWLOC_OBJ_PU;
        nobj = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_PU);
    }
    int nnuma = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_NUMANODE);
    int npkg = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_PACKAGE);
    if (nobj <= 0)
        return ct__error(CT_ERR_UNSUPPORTED, "topology: hwloc found no core or PU");

    hwloc_bitmap_t allowed = usable_pus(t);
    if (allowed == NULL)
        return ct__error(CT_ERR_NOMEM, "topology: out of memory");

    ct_status st = CT_OK;
    int *node_of = calloc((size_t)nobj, sizeof(int)); /* hwloc NUMA logical idx */
    int *pkg_of = calloc((size_t)nobj, sizeof(int));
    int *numa_key = calloc((size_t)(nnuma > 0 ? nnuma : 1), sizeof(int));
    int *pkg_key = calloc((size_t)(npkg > 0 ? npkg : 1), sizeof(int));
    int *numa_os = calloc((size_t)(nnuma > 0 ? nnuma : 1), sizeof(int));
    int *pkg_os = calloc((size_t)(npkg > 0 ? npkg : 1), sizeof(int));
    t->core_set = calloc((size_t)nobj, sizeof(hwloc_bitmap_t));
    t->core_node = calloc((size_t)nobj, sizeof(int));
    t->core_package = calloc((size_t)nobj, sizeof(int));
    if (node_of == NULL || pkg_of == NULL || numa_key == NULL || pkg_key == NULL ||
        numa_os == NULL || pkg_os == NULL || t->core_set == NULL || t->core_node == NULL ||
        t->core_package == NULL) {
        st = ct__error(CT_ERR_NOMEM, "topology: out of memory");
        goto done;
    }

    /* Usable cores, in logical order, with their hwloc node and package. */
    for (int i = 0; i < nobj; i++) {
        hwloc_obj_t core = hwloc_get_obj_by_type(h, core_type, (unsigned)i);
        if (core == NULL || core->cpuset == NULL || !hwloc_bitmap_intersects(core->cpuset, allowed))
            continue;
        int c = t->ncores;
        t->core_set[c] = hwloc_bitmap_alloc();
        if (t->core_set[c] == NULL) {
            st = ct__error(CT_ERR_NOMEM, "topology: out of memory");
            goto done;
        }
        hwloc_bitmap_and(t->core_set[c], core->cpuset, allowed);
        t->ncores++;
        t->npus += hwloc_bitmap_weight(t->core_set[c]);

        int node = -1;
        for (int n = 0; n < nnuma && node < 0; n++) {
            hwloc_obj_t o = hwloc_get_obj_by_type(h, HWLOC_OBJ_NUMANODE, (unsigned)n);
            if (o != NULL && o->cpuset != NULL && hwloc_bitmap_isincluded(core->cpuset, o->cpuset))
                node = n;
        }
        for (int n = 0; n < nnuma && node < 0; n++) {
            hwloc_obj_t o = hwloc_get_obj_by_type(h, HWLOC_OBJ_NUMANODE, (unsigned)n);
            if (o != NULL && o->cpuset != NULL && hwloc_bitmap_intersects(core->cpuset, o->cpuset))
                node = n;
        }
        node_of[c] = node < 0 ? 0 : node;
        hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(h, HWLOC_OBJ_PACKAGE, core);
        pkg_of[c] = pkg != NULL ? (int)pkg->logical_index : 0;
    }
    if (t->ncores == 0) {
        st = ct__error(CT_ERR_UNSUPPORTED, "topology: no core is usable by this process "
                                           "(allowed set and affinity exclude every PU)");
        goto done;
    }

    /* Compact numbering of the nodes and packages that have usable cores. */
    {
        int nn = 0, np = 0;
        for (int k = 0; k < (nnuma > 0 ? nnuma : 1); k++)
            numa_key[k] = -1;
        for (int k = 0; k < (npkg > 0 ? npkg : 1); k++)
            pkg_key[k] = -1;
        for (int c = 0; c < t->ncores; c++) {
            numa_key[node_of[c]] = 0;
            pkg_key[pkg_of[c]] = 0;
        }
        for (int k = 0; k < (nnuma > 0 ? nnuma : 1); k++)
            if (numa_key[k] == 0) {
                hwloc_obj_t o = nnuma > 0 ? hwloc_get_obj_by_type(h, HWLOC_OBJ_NUMANODE, (unsigned)k)
                                          : NULL;
                numa_os[nn] = o != NULL ? (int)o->os_index : 0;
                numa_key[k] = nn++;
            }
        for (int k = 0; k < (npkg > 0 ? npkg : 1); k++)
            if (pkg_key[k] == 0) {
                pkg_os[np] = k;
                pkg_key[k] = np++;
            }
        for (int c = 0; c < t->ncores; c++) {
            t->core_node[c] = numa_key[node_of[c]];
            t->core_package[c] = pkg_key[pkg_of[c]];
        }
        if (group_build(&t->nodes, t->core_node, nn, numa_os, t->ncores) != 0 ||
            group_build(&t->packages, t->core_package, np, pkg_os, t->ncores) != 0) {
            st = ct__error(CT_ERR_NOMEM, "topology: out of memory");
            goto done;
        }
        t->domains_are_packages = np > nn;
    }

done:
    hwloc_bitmap_free(allowed);
    free(node_of);
    free(pkg_of);
    free(numa_key);
    free(pkg_key);
    free(numa_os);
    free(pkg_os);
    return st;
}

ct_status ct__topology_load(const char *desc, ct__topology **out)
{
    CT__CHECK_ARG(out);
    *out = NULL;
    ct__topology *t = calloc(1, sizeof *t);
    if (t == NULL)
        return ct__error(CT_ERR_NOMEM, "topology: out of memory");
    if (hwloc_topology_init(&t->h) != 0) {
        t->h = NULL;
        ct__topology_free(t);
        return ct__error(CT_ERR_INTERNAL, "topology: hwloc_topology_init failed: %s",
                         strerror(errno));
    }
    if (desc == NULL) {
        t->this_system = 1;
    } else if (desc[0] == '<') {
        if (hwloc_topology_set_xmlbuffer(t->h, desc, (int)strlen(desc) + 1) != 0) {
            ct__topology_free(t);
            return ct__error(CT_ERR_FORMAT, "topology: XML text rejected by hwloc: %s",
                             strerror(errno));
        }
    } else if (ends_with(desc, ".xml")) {
        if (access(desc, R_OK) != 0) {
            int e = errno;
            ct__topology_free(t);
            return ct__error(CT_ERR_IO, "topology: %s: %s", desc, strerror(e));
        }
        if (hwloc_topology_set_xml(t->h, desc) != 0) {
            int e = errno;
            ct__topology_free(t);
            return ct__error(CT_ERR_FORMAT, "topology: %s: rejected by hwloc: %s", desc,
                             strerror(e));
        }
    } else if (hwloc_topology_set_synthetic(t->h, desc) != 0) {
        ct__topology_free(t);
        return ct__error(CT_ERR_INVALID_ARG, "topology: bad hwloc synthetic description '%s'",
                         desc);
    }
    if (hwloc_topology_load(t->h) != 0) {
        int e = errno;
        ct__topology_free(t);
        if (desc != NULL && (desc[0] == '<' || ends_with(desc, ".xml")))
            return ct__error(CT_ERR_FORMAT, "topology: hwloc could not load the XML %s: %s",
                             desc[0] == '<' ? "text" : desc, strerror(e));
        return ct__error(CT_ERR_INTERNAL, "topology: hwloc_topology_load failed: %s",
                         strerror(e));
    }
    if (t->this_system && !hwloc_topology_is_thissystem(t->h))
        t->this_system = 0; /* HWLOC_XMLFILE / HWLOC_SYNTHETIC in the environment */
    ct_status st = build(t);
    if (st != CT_OK) {
        ct__topology_free(t);
        return st;
    }
    *out = t;
    return CT_OK;
}

int ct__topology_is_this_system(const ct__topology *t) { return t != NULL && t->this_system; }
int ct__topology_bound_at_start(const ct__topology *t) { return t != NULL && t->bound_at_start; }
int ct__topology_npackages(const ct__topology *t) { return t ? t->packages.n : 0; }
int ct__topology_nnodes(const ct__topology *t) { return t ? t->nodes.n : 0; }
int ct__topology_ncores(const ct__topology *t) { return t ? t->ncores : 0; }
int ct__topology_npus(const ct__topology *t) { return t ? t->npus : 0; }

static int group_ncores(const group_list *g, int i)
{
    return i >= 0 && i < g->n ? g->off[i + 1] - g->off[i] : -1;
}

static int group_core(const group_list *g, int i, int k)
{
    int n = group_ncores(g, i);
    return n >= 0 && k >= 0 && k < n ? g->cores[g->off[i] + k] : -1;
}

int ct__topology_node_os_index(const ct__topology *t, int node)
{
    return t != NULL && node >= 0 && node < t->nodes.n ? t->nodes.os_index[node] : -1;
}
int ct__topology_node_ncores(const ct__topology *t, int node)
{
    return t != NULL ? group_ncores(&t->nodes, node) : -1;
}
int ct__topology_node_core(const ct__topology *t, int node, int i)
{
    return t != NULL ? group_core(&t->nodes, node, i) : -1;
}

static const group_list *domains(const ct__topology *t)
{
    return t->domains_are_packages ? &t->packages : &t->nodes;
}
int ct__topology_ndomains(const ct__topology *t) { return t ? domains(t)->n : 0; }
int ct__topology_domains_are_packages(const ct__topology *t)
{
    return t != NULL && t->domains_are_packages;
}
int ct__topology_domain_ncores(const ct__topology *t, int d)
{
    return t != NULL ? group_ncores(domains(t), d) : -1;
}
int ct__topology_domain_core(const ct__topology *t, int d, int i)
{
    return t != NULL ? group_core(domains(t), d, i) : -1;
}

static int core_ok(const ct__topology *t, int c) { return t != NULL && c >= 0 && c < t->ncores; }
int ct__topology_core_node(const ct__topology *t, int c) { return core_ok(t, c) ? t->core_node[c] : -1; }
int ct__topology_core_package(const ct__topology *t, int c)
{
    return core_ok(t, c) ? t->core_package[c] : -1;
}
int ct__topology_core_pus(const ct__topology *t, int c, int *pus, int max)
{
    if (!core_ok(t, c))
        return -1;
    int n = 0;
    unsigned id;
    hwloc_bitmap_foreach_begin(id, t->core_set[c]) {
        if (pus != NULL && n < max)
            pus[n] = (int)id;
        n++;
    }
    hwloc_bitmap_foreach_end();
    return n;
}

/* ---- the plan ------------------------------------------------------------ */

void ct__pin_plan_free(ct__rank_plan *p)
{
    if (p == NULL)
        return;
    free(p->cores);
    free(p->thread_core);
    memset(p, 0, sizeof *p);
}

/* OMP_NUM_THREADS: its first number ("8" or "8,4"); 0 when unset or unusable. */
static int omp_threads(void)
{
    const char *s = getenv("OMP_NUM_THREADS");
    if (s == NULL)
        return 0;
    const char *p = s;
    while (*p == ' ' || *p == '\t')
        p++;
    char *end;
    errno = 0;
    long v = strtol(p, &end, 10);
    while (*end == ' ' || *end == '\t')
        end++;
    if (end == p || errno != 0 || v < 1 || v > 1 << 20 || (*end != '\0' && *end != ',')) {
        ct__log(CT_LOG_WARNING, "OMP_NUM_THREADS='%s' is not a positive number; ignored", s);
        return 0;
    }
    return (int)v;
}

ct_status ct__pin_plan(const ct__topology *t, int local_rank, int local_world,
                       int requested_threads, ct__rank_plan *out)
{
    CT__CHECK_ARG(t);
    CT__CHECK_ARG(out);
    memset(out, 0, sizeof *out);
    if (local_world < 1 || local_rank < 0 || local_rank >= local_world)
        return ct__error(CT_ERR_INVALID_ARG,
                         "pin plan: local rank %d is outside [0, local world size %d)",
                         local_rank, local_world);
    if (requested_threads < 0)
        return ct__error(CT_ERR_INVALID_ARG, "pin plan: thread count %d is negative",
                         requested_threads);

    const group_list *dom = domains(t);
    int D = dom->n, W = local_world, r = local_rank;
    const int *src; /* the core list the share is cut from */
    int n, k, j;    /* its length, ranks sharing it, this rank's place */
    if (W < D && D % W == 0) { /* whole domains each: 1 rank uses all */
        int per = D / W;
        src = dom->cores + dom->off[r * per];
        n = dom->off[(r + 1) * per] - dom->off[r * per];
        k = 1;
        j = 0;
    } else if (W <= D || W % D == 0) {
        int d = r % D;
        src = dom->cores + dom->off[d];
        n = dom->off[d + 1] - dom->off[d];
        k = (W - d + D - 1) / D;
        j = r / D;
    } else {
        src = dom->cores;
        n = t->ncores;
        k = W;
        j = r;
    }
    int first, count;
    if (k > n) {
        first = j % n;
        count = 1;
        out->oversubscribed = 1;
    } else {
        first = (int)((long)j * n / k);
        count = (int)((long)(j + 1) * n / k) - first;
    }

    out->local_rank = r;
    out->local_world = W;
    out->domain_is_package = t->domains_are_packages;
    out->this_system = t->this_system;
    out->ncores = count;
    out->cores = malloc(sizeof(int) * (size_t)count);
    if (out->cores == NULL)
        return ct__error(CT_ERR_NOMEM, "pin plan: out of memory");
    for (int i = 0; i < count; i++)
        out->cores[i] = src[first + i];

    /* Domain (-1 when mixed) and memory node (the most frequent). */
    const int *dkey = t->domains_are_packages ? t->core_package : t->core_node;
    out->domain = dkey[out->cores[0]];
    for (int i = 1; i < count; i++)
        if (dkey[out->cores[i]] != out->domain)
            out->domain = -1;
    {
        int best = -1, best_n = 0;
        for (int i = 0; i < count; i++) {
            int nd = t->core_node[out->cores[i]], m = 0;
            for (int q = 0; q < count; q++)
                m += t->core_node[out->cores[q]] == nd;
            if (m > best_n || (m == best_n && nd < best)) {
                best = nd;
                best_n = m;
            }
        }
        out->node = best;
        out->node_os_index = t->nodes.os_index[best];
    }

    /* Threads. */
    int nt = requested_threads;
    out->threads_source = CT__THREADS_FROM_API;
    if (nt == 0) {
        nt = omp_threads();
        out->threads_source = CT__THREADS_FROM_OMP;
    }
    if (nt == 0) {
        nt = count;
        out->threads_source = CT__THREADS_FROM_CORES;
    }
    out->threads_requested = nt;
    if (nt > count) {
        ct__log(CT_LOG_WARNING,
                "local rank %d: %d threads asked (%s) but its share has %d core%s; "
                "using %d, one per core",
                r, nt, out->threads_source == CT__THREADS_FROM_OMP ? "OMP_NUM_THREADS" : "API",
                count, count == 1 ? "" : "s", count);
        nt = count;
    }
    out->nthreads = nt;
    out->thread_core = malloc(sizeof(int) * (size_t)nt);
    if (out->thread_core == NULL) {
        ct__pin_plan_free(out);
        return ct__error(CT_ERR_NOMEM, "pin plan: out of memory");
    }
    for (int i = 0; i < nt; i++)
        out->thread_core[i] = out->cores[i];
    if (out->oversubscribed)
        ct__log(CT_LOG_WARNING,
                "local rank %d of %d: more ranks than cores to share; it gets core %d, "
                "which other ranks use too",
                r, W, out->cores[0]);
    return CT_OK;
}

static void list_text(hwloc_const_bitmap_t set, char *buf, size_t size)
{
    if (hwloc_bitmap_iszero(set))
        snprintf(buf, size, "none");
    else
        hwloc_bitmap_list_snprintf(buf, size, set);
}

/* PUs of the given cores, or NULL. */
static hwloc_bitmap_t cores_pus(const ct__topology *t, const int *cores, int n)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (set == NULL)
        return NULL;
    for (int i = 0; i < n; i++)
        if (core_ok(t, cores[i]))
            hwloc_bitmap_or(set, set, t->core_set[cores[i]]);
    return set;
}

size_t ct__pin_plan_describe(const ct__topology *t, const ct__rank_plan *p, char *buf,
                             size_t size)
{
    char cores[256] = "?", pus[512] = "?", where[192];
    int len;
    if (t == NULL || p == NULL || p->cores == NULL) {
        len = snprintf(buf, size, "(no plan)");
        return len < 0 ? 0 : (size_t)len;
    }
    hwloc_bitmap_t cs = hwloc_bitmap_alloc();
    if (cs != NULL) {
        for (int i = 0; i < p->ncores; i++)
            hwloc_bitmap_set(cs, (unsigned)p->cores[i]);
        list_text(cs, cores, sizeof cores);
        hwloc_bitmap_free(cs);
    }
    hwloc_bitmap_t ps = cores_pus(t, p->cores, p->ncores);
    if (ps != NULL) {
        list_text(ps, pus, sizeof pus);
        hwloc_bitmap_free(ps);
    }
    if (p->domain < 0) {
        /* The domains spanned: packages by logical index, nodes by OS index. */
        char list[64] = "?";
        hwloc_bitmap_t ds = hwloc_bitmap_alloc();
        if (ds != NULL) {
            for (int i = 0; i < p->ncores; i++)
                hwloc_bitmap_set(ds, (unsigned)(p->domain_is_package
                                                    ? t->core_package[p->cores[i]]
                                                    : t->nodes.os_index[t->core_node[p->cores[i]]]));
            list_text(ds, list, sizeof list);
            hwloc_bitmap_free(ds);
        }
        snprintf(where, sizeof where, "%s %s (memory on %snode %d)",
                 p->domain_is_package ? "packages" : "nodes", list,
                 p->domain_is_package ? "NUMA " : "", p->node_os_index);
    }
    else if (p->domain_is_package)
        snprintf(where, sizeof where, "package %d (NUMA node %d)", p->domain, p->node_os_index);
    else
        snprintf(where, sizeof where, "node %d", p->node_os_index);
    len = snprintf(buf, size, "rank %d -> %s -> cores %s (PUs %s), %d thread%s%s%s%s",
                   p->local_rank, where, cores, pus, p->nthreads, p->nthreads == 1 ? "" : "s",
                   p->threads_source == CT__THREADS_FROM_OMP ? " (OMP_NUM_THREADS)" : "",
                   p->threads_requested > p->nthreads ? " (more asked, one per core)" : "",
                   p->oversubscribed ? "; core shared with other ranks" : "");
    return len < 0 ? 0 : (size_t)len;
}

/* ---- binding -------------------------------------------------------------- */

static ct_status check_thread_args(const ct__topology *t, const ct__rank_plan *p, int ti,
                                   const char *what)
{
    CT__CHECK_ARG(t);
    CT__CHECK_ARG(p);
    if (ti < 0 || ti >= p->nthreads || p->thread_core == NULL)
        return ct__error(CT_ERR_INVALID_ARG, "%s: thread %d is outside the plan's %d threads",
                         what, ti, p->nthreads);
    if (!t->this_system || !p->this_system)
        return ct__error(CT_ERR_UNSUPPORTED,
                         "%s: the topology is not this machine's (XML or synthetic)", what);
    if (!core_ok(t, p->thread_core[ti]))
        return ct__error(CT_ERR_INVALID_ARG, "%s: thread %d's core %d is not in the topology",
                         what, ti, p->thread_core[ti]);
    return CT_OK;
}

ct_status ct__pin_current_thread(const ct__topology *t, const ct__rank_plan *p, int ti)
{
    ct_status st = check_thread_args(t, p, ti, "pin thread");
    if (st != CT_OK)
        return st;
    int c = p->thread_core[ti];
    if (hwloc_set_cpubind(t->h, t->core_set[c], HWLOC_CPUBIND_THREAD) != 0) {
        int e = errno;
        char pus[256];
        list_text(t->core_set[c], pus, sizeof pus);
        return ct__error(e == ENOSYS ? CT_ERR_UNSUPPORTED : CT_ERR_INTERNAL,
                         "pin thread: binding thread %d to core %d (PUs %s) failed: %s", ti, c,
                         pus, strerror(e));
    }
    return CT_OK;
}

static ct_status report(hwloc_const_bitmap_t expected, hwloc_const_bitmap_t applied,
                        int process, ct__pin_report *out)
{
    list_text(expected, out->expected, sizeof out->expected);
    list_text(applied, out->applied, sizeof out->applied);
    if (process ? hwloc_bitmap_isincluded(expected, applied) : hwloc_bitmap_isequal(expected, applied))
        out->state = CT__PIN_EXACT;
    else if (process ? hwloc_bitmap_intersects(expected, applied)
                     : !hwloc_bitmap_iszero(applied) && hwloc_bitmap_isincluded(applied, expected))
        out->state = CT__PIN_NARROWED;
    else
        out->state = CT__PIN_CHANGED;
    return CT_OK;
}

ct_status ct__pin_check(const ct__topology *t, const ct__rank_plan *p, int ti, ct__pin_report *out)
{
    CT__CHECK_ARG(out);
    memset(out, 0, sizeof *out);
    ct_status st = check_thread_args(t, p, ti, "pin check");
    if (st != CT_OK)
        return st;
    hwloc_bitmap_t applied = hwloc_bitmap_alloc();
    if (applied == NULL)
        return ct__error(CT_ERR_NOMEM, "pin check: out of memory");
    if (hwloc_get_cpubind(t->h, applied, HWLOC_CPUBIND_THREAD) != 0) {
        int e = errno;
        hwloc_bitmap_free(applied);
        return ct__error(e == ENOSYS ? CT_ERR_UNSUPPORTED : CT_ERR_INTERNAL,
                         "pin check: reading thread %d's binding failed: %s", ti, strerror(e));
    }
    report(t->core_set[p->thread_core[ti]], applied, 0, out);
    hwloc_bitmap_free(applied);
    if (out->state != CT__PIN_EXACT)
        ct__log(CT_LOG_WARNING, "local rank %d thread %d: bound to PUs %s, expected %s (%s)",
                p->local_rank, ti, out->applied, out->expected,
                out->state == CT__PIN_NARROWED ? "narrowed" : "changed");
    return CT_OK;
}

ct_status ct__pin_check_process(const ct__topology *t, const ct__rank_plan *p, ct__pin_report *out)
{
    CT__CHECK_ARG(t);
    CT__CHECK_ARG(p);
    CT__CHECK_ARG(out);
    memset(out, 0, sizeof *out);
    if (!t->this_system || !p->this_system)
        return ct__error(CT_ERR_UNSUPPORTED,
                         "affinity check: the topology is not this machine's (XML or synthetic)");
    hwloc_bitmap_t expected = cores_pus(t, p->cores, p->ncores);
    hwloc_bitmap_t applied = hwloc_bitmap_alloc();
    if (expected == NULL || applied == NULL) {
        hwloc_bitmap_free(expected);
        hwloc_bitmap_free(applied);
        return ct__error(CT_ERR_NOMEM, "affinity check: out of memory");
    }
    if (hwloc_get_cpubind(t->h, applied, HWLOC_CPUBIND_PROCESS) != 0) {
        cpu_set_t cs;
        if (sched_getaffinity(0, sizeof cs, &cs) != 0) {
            int e = errno;
            hwloc_bitmap_free(expected);
            hwloc_bitmap_free(applied);
            return ct__error(CT_ERR_INTERNAL, "affinity check: reading the affinity failed: %s",
                             strerror(e));
        }
        for (int i = 0; i < CPU_SETSIZE; i++)
            if (CPU_ISSET(i, &cs))
                hwloc_bitmap_set(applied, (unsigned)i);
    }
    report(expected, applied, 1, out);
    hwloc_bitmap_free(expected);
    hwloc_bitmap_free(applied);
    if (out->state != CT__PIN_EXACT)
        ct__log(CT_LOG_WARNING,
                "local rank %d: the process's affinity is now PUs %s, which %s the rank's "
                "PUs %s; something in the process changed it after start-up",
                p->local_rank, out->applied,
                out->state == CT__PIN_NARROWED ? "no longer covers all of" : "excludes",
                out->expected);
    return CT_OK;
}

/* ---- node-local memory ------------------------------------------------------ */

void *ct__node_alloc(const ct__rank_plan *p, size_t size)
{
    if (size == 0)
        return NULL;
    void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return NULL;
    if (p != NULL && p->this_system && p->node_os_index >= 0 && p->node_os_index < 1024 &&
        numa_available() >= 0) {
        /* Preferred, not strict: a full node spills over rather than failing. */
        unsigned long mask[1024 / (8 * sizeof(unsigned long))];
        memset(mask, 0, sizeof mask);
        mask[p->node_os_index / (8 * sizeof(unsigned long))] |=
            1UL << (p->node_os_index % (8 * sizeof(unsigned long)));
        if (mbind(mem, size, MPOL_PREFERRED, mask, sizeof mask * 8, 0) != 0)
            ct__log(CT_LOG_DEBUG, "node alloc: mbind to node %d failed: %s", p->node_os_index,
                    strerror(errno));
    }
    return mem;
}

void ct__node_free(void *ptr, size_t size)
{
    if (ptr != NULL && size > 0)
        munmap(ptr, size);
}

void ct__node_bind(const ct__rank_plan *p, void *ptr, size_t size)
{
    if (p != NULL && p->this_system)
        ct__node_bind_os_index(p->node_os_index, ptr, size);
}

void ct__node_bind_os_index(int node, void *ptr, size_t size)
{
    long page = sysconf(_SC_PAGESIZE);
    if (ptr == NULL || size == 0 || page <= 0 || node < 0)
        return;
    /* One node: nothing to move to, and no policy worth setting. */
    if (numa_available() < 0 || numa_max_node() < 1)
        return;
    if (node > numa_max_node() || node >= 1024) {
        ct__log(CT_LOG_DEBUG, "node bind: NUMA node %d does not exist here (highest %d)", node,
                numa_max_node());
        return;
    }
    uintptr_t start = ((uintptr_t)ptr + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    uintptr_t end = ((uintptr_t)ptr + size) & ~((uintptr_t)page - 1);
    if (end <= start)
        return; /* no whole page of its own */
    unsigned long mask[1024 / (8 * sizeof(unsigned long))];
    memset(mask, 0, sizeof mask);
    mask[node / (8 * sizeof(unsigned long))] |= 1UL << (node % (8 * sizeof(unsigned long)));
    /* The kernel reads maxnode - 1 bits: + 1 covers the whole mask. */
    if (mbind((void *)start, end - start, MPOL_BIND, mask, sizeof mask * 8 + 1, MPOL_MF_MOVE) != 0)
        ct__log(CT_LOG_DEBUG, "node bind: moving %zu bytes at %p to NUMA node %d failed: %s",
                (size_t)(end - start), (void *)start, node, strerror(errno));
}
