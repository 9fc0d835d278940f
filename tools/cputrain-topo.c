/* cputrain-topo: shows how libcputrain would place the local ranks of a job
 * on this machine (or on a described one): the machine's usable cores, then
 * one line per local rank with its NUMA node, cores and threads. With
 * --apply it binds itself as this process's local rank, through a tiny
 * model, and shows what the threads' affinity reads back as: a quick check
 * of a launcher's or container's CPU restrictions. Uses only the public API.
 * Exit status: 0 done, 1 a library failure, 2 bad usage. */
#include <cputrain/cputrain.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANKS 4096

static const char *const USAGE =
    "usage: cputrain-topo [--topology DESC|FILE.xml] [--local-world-size N]\n"
    "                     [--threads T] [--apply] [--help]\n"
    "Prints the machine's usable cores and, for each of the N local ranks of a\n"
    "job, the NUMA node its memory comes from and the cores its threads run on.\n"
    "  --topology DESC|FILE.xml  plan for another machine: an hwloc synthetic\n"
    "                            description (\"package:2 numa:1 core:8 pu:2\") or an\n"
    "                            XML file from `lstopo --of xml`; default: this one\n"
    "  --local-world-size N      ranks on the machine; default: the launcher's\n"
    "                            LOCAL_WORLD_SIZE, MPI_LOCALNRANKS or\n"
    "                            OMPI_COMM_WORLD_LOCAL_SIZE (first found), else 1\n"
    "  --threads T               threads per rank (at most its cores); default:\n"
    "                            OMP_NUM_THREADS, else one per core of its share\n"
    "  --apply                   this machine only: bind this process as its local\n"
    "                            rank (LOCAL_RANK, MPI_LOCALRANKID or\n"
    "                            OMPI_COMM_WORLD_LOCAL_RANK; default 0) with a tiny\n"
    "                            model and print what the threads read back as\n";

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "cputrain-topo: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(cputrain-topo --help shows the usage)\n");
    return 2;
}

/* Library failure: exit 2 when it was an argument the user gave. */
static int lib_error(ct_status st, const char *what)
{
    fprintf(stderr, "cputrain-topo: %s: %s: %s\n", what, ct_status_name(st), ct_last_error());
    return st == CT_ERR_INVALID_ARG ? 2 : 1;
}

/* A whole decimal number in [lo, hi]; 0 when it is not one. */
static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    long v;
    if (s == NULL || *s == '\0')
        return 0;
    errno = 0;
    v = strtol(s, &end, 10);
    if (*end != '\0' || errno != 0 || v < lo || v > hi)
        return 0;
    *out = (int)v;
    return 1;
}

/* The launcher's local rank and size variables, in ct_dist's order (first
 * family found wins, so a rank is never paired with another's size). */
static const struct {
    const char *rank, *size;
} LAUNCHERS[] = {
    {"LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
};

static int launcher_family(void)
{
    for (size_t i = 0; i < sizeof LAUNCHERS / sizeof LAUNCHERS[0]; i++)
        if (getenv(LAUNCHERS[i].rank) != NULL || getenv(LAUNCHERS[i].size) != NULL)
            return (int)i;
    return -1;
}

/* The machine line, from the placement of one rank on the whole machine:
 * "nodes 0-1 -> cores 0-7 (PUs 0-15): 8 cores, 16 PUs". The text is
 * ct_placement_describe's documented form; thread_cpus gives the counts. */
static int print_machine(const char *topology)
{
    ct_placement *p;
    ct_status st;
    char *omp = getenv("OMP_NUM_THREADS"), *saved = omp ? strdup(omp) : NULL;
    int ncores, npus = 0;
    const char *text, *where, *cores, *end;

    /* threads 0 takes OMP_NUM_THREADS; unset, one thread per core. */
    unsetenv("OMP_NUM_THREADS");
    st = ct_placement_create(topology, 0, 1, 0, &p);
    if (saved != NULL)
        setenv("OMP_NUM_THREADS", saved, 1);
    free(saved);
    if (st != CT_OK)
        return lib_error(st, topology ? topology : "this machine");
    ncores = ct_placement_threads(p);
    for (int t = 0; t < ncores; t++)
        npus += ct_placement_thread_cpus(p, t, NULL, 0);

    text = ct_placement_describe(p);
    where = strstr(text, " -> ");
    cores = where ? strstr(where + 4, " -> cores ") : NULL;
    end = cores ? strstr(cores, "(PUs ") : NULL;
    end = end ? strchr(end, ')') : NULL;
    printf("machine: ");
    if (where && cores && end) {
        /* "nodes 0-1 (memory on node 0)": the memory part is the rank's. */
        const char *memory = strstr(where + 4, " (memory on ");
        const char *stop = memory && memory < cores ? memory : cores;
        printf("%.*s%.*s: ", (int)(stop - (where + 4)), where + 4, (int)(end + 1 - cores), cores);
    }
    printf("%d core%s, %d PU%s%s\n", ncores, ncores == 1 ? "" : "s", npus, npus == 1 ? "" : "s",
           topology ? "" : " usable by this process");
    ct_placement_free(p);
    return 0;
}

/* --apply: bind this process as local rank `rank` through a tiny model. */
static int apply(int rank, int world, int threads, const char *rank_from)
{
    ct_placement *p;
    ct_model *m;
    ct_status st;
    if ((st = ct_placement_create(NULL, rank, world, threads, &p)) != CT_OK)
        return lib_error(st, "this machine");
    if ((st = ct_model_create("bert-test", CT_TASK_QUESTION_ANSWERING, 0, &m)) != CT_OK) {
        ct_placement_free(p);
        return lib_error(st, "tiny model");
    }
    st = ct_model_set_placement(m, p);
    if (st == CT_OK)
        printf("this process, local rank %d (%s):\n%s\n", rank, rank_from,
               ct_placement_describe(p));
    ct_model_free(m);
    ct_placement_free(p);
    return st == CT_OK ? 0 : lib_error(st, "applying the placement");
}

int main(int argc, char **argv)
{
    const char *topology = NULL, *world_from = "default", *rank_from = "default";
    int world = 1, threads = 0, do_apply = 0, world_set = 0, rank = 0, family, rc;

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *a = arg, *v = NULL, *eq = strchr(arg, '=');
        char name[64];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(USAGE, stdout);
            return 0;
        }
        if (strcmp(a, "--apply") == 0) {
            do_apply = 1;
            continue;
        }
        /* --name VALUE or --name=VALUE */
        if (strncmp(a, "--", 2) == 0 && eq != NULL && (size_t)(eq - a) < sizeof name) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = '\0';
            a = name;
            v = eq + 1;
        }
        if (strcmp(a, "--topology") != 0 && strcmp(a, "--local-world-size") != 0 &&
            strcmp(a, "--threads") != 0)
            return usage_error("unknown argument '%s'", arg);
        if (v == NULL && i + 1 < argc)
            v = argv[++i];
        if (v == NULL)
            return usage_error("%s needs a value", a);
        if (strcmp(a, "--topology") == 0) {
            topology = v;
        } else if (strcmp(a, "--local-world-size") == 0) {
            if (!parse_int(v, 1, MAX_RANKS, &world))
                return usage_error("--local-world-size '%s' is not a count in [1, 4096]", v);
            world_set = 1;
            world_from = "--local-world-size";
        } else if (!parse_int(v, 0, INT_MAX, &threads)) {
            return usage_error("--threads '%s' is not a count (0: the default)", v);
        }
    }
    if (do_apply && topology != NULL)
        return usage_error("--apply binds this machine's threads: %s is for planning only",
                           "--topology");

    family = launcher_family();
    if (!world_set && family >= 0 && getenv(LAUNCHERS[family].size) != NULL) {
        world_from = LAUNCHERS[family].size;
        if (!parse_int(getenv(world_from), 1, MAX_RANKS, &world))
            return usage_error("the launcher's %s is not a count in [1, 4096]", world_from);
    }
    if (do_apply && family >= 0 && getenv(LAUNCHERS[family].rank) != NULL) {
        rank_from = LAUNCHERS[family].rank;
        if (!parse_int(getenv(rank_from), 0, INT_MAX, &rank))
            return usage_error("the launcher's %s is not a rank", rank_from);
    }
    if (do_apply && rank >= world) {
        fprintf(stderr, "cputrain-topo: local rank %d (%s) is outside [0, %d) (%s)\n", rank,
                rank_from, world, world_from);
        return 2;
    }

    ct_log_set_callback(ct_log_to_stderr, NULL);
    if ((rc = print_machine(topology)) != 0)
        return rc;
    printf("local world size %d (%s), threads per rank: ", world, world_from);
    if (threads > 0)
        printf("%d (--threads)\n", threads);
    else if (getenv("OMP_NUM_THREADS") != NULL)
        printf("OMP_NUM_THREADS=%s\n", getenv("OMP_NUM_THREADS"));
    else
        printf("one per core\n");
    for (int r = 0; r < world; r++) {
        ct_placement *p;
        ct_status st = ct_placement_create(topology, r, world, threads, &p);
        if (st != CT_OK)
            return lib_error(st, topology ? topology : "this machine");
        printf("%s\n", ct_placement_describe(p));
        ct_placement_free(p);
    }
    fflush(stdout);
    return do_apply ? apply(rank, world, threads, rank_from) : 0;
}
