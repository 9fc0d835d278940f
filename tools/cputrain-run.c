/* cputrain-run: torchrun's job on one machine, without Python. It starts
 * --nproc_per_node copies of PROGRAM (as `torchrun --no-python`) with the
 * launcher environment the library reads (RANK, WORLD_SIZE, LOCAL_RANK,
 * LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT,
 * TORCHELASTIC_RESTART_COUNT, ...), forwards SIGINT / SIGTERM to them,
 * restarts the whole group when a worker fails (up to --max_restarts), and
 * exits with the first failed worker's status, naming the rank and how it
 * failed. Options are torchrun's names (either spelling, '_' or '-'), also
 * read from the PET_* variables a Kubeflow PyTorchJob sets.
 *
 * Elastic width (--nnodes MIN:MAX) on one machine: a node is one worker, as
 * in a PyTorchJob whose pods run one process each, so the unit that comes
 * and goes is a worker slot. The job starts --nproc_per_node wide. A slot
 * whose worker fails --drop_after times in a row is dropped and the group
 * restarts narrower, down to MIN; the --grow_file FILE holds a number of
 * slots to add (what new nodes joining would bring), read at each restart
 * and on SIGUSR1, up to MAX. The workers resume from their newest
 * checkpoint; the trainer keeps the global batch. Several machines'
 * launchers meet at a rendezvous of their own (--nnodes MIN:MAX with
 * --rdzv_endpoint), authenticated as the tcp backend's ranks are (the
 * library's ct_rendezvous_*).
 *
 * This file is the job on one machine (main); its parts are in tools/run/:
 * options.c (the settings), signals.c, supervisor.c (one attempt of the
 * group), net.c (lines over a connection), rendezvous.c (several
 * machines). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>

#include "run/run.h"

int main(int argc, char **argv)
{
    static group g;
    opts o;
    attempt a;
    int first = 0, rc, width, min_width, max_width, restarts = 0, next_slot, number = 0;
    int fails_in_row[MAX_WORKERS * 2] = {0}, slots[MAX_WORKERS];
    int elastic;

    memset(&o, 0, sizeof o);
    o.nproc = o.nnodes_min = o.nnodes_max = 1;
    o.node_rank = -1;
    o.redirects = o.tee = o.drop_after = -1;
    strcpy(o.master_addr, "127.0.0.1");
    strcpy(o.rdzv_id, "none");
    o.master_port = 29500;
    if ((rc = read_env(&o)) != 0 || (rc = parse_args(argc, argv, &o, &first)) != 0 ||
        (rc = check_opts(&o)) != 0)
        return rc;
    if (o.node_rank < 0)
        o.node_rank = 0;
    elastic = o.nnodes_min < o.nnodes_max;
    if (o.standalone) {
        if (!(o.master_port = free_port(htonl(INADDR_LOOPBACK)))) {
            say("--standalone: no free port on 127.0.0.1: %s", strerror(errno));
            return 1;
        }
        strcpy(o.master_addr, "127.0.0.1");
    }
    if (setup_signals() != 0) {
        say("cannot set up signal handling: %s", strerror(errno));
        return 1;
    }
    if (elastic && o.rdzv_given)
        return agent_main(&o, argv + first);
    /* One machine, elastic: a node is a worker (a PyTorchJob pod's one
     * process); the job starts nproc_per_node wide, may narrow to MIN and
     * widen to MAX. */
    width = o.nproc;
    min_width = elastic ? o.nnodes_min : o.nproc;
    max_width = elastic ? o.nnodes_max : o.nproc;
    for (int i = 0; i < width; i++)
        slots[i] = i;
    next_slot = width;
    if (elastic)
        say("elastic: %d worker%s now, between %d and %d (--nnodes %d:%d); a slot is dropped "
            "after %d failures in a row%s%s", width, width == 1 ? "" : "s",
            min_width, max_width, o.nnodes_min, o.nnodes_max, o.drop_after,
            o.grow_file[0] ? "; slots are added through " : "", o.grow_file);

    for (;;) {
        outcome r;
        memset(&a, 0, sizeof a);
        a.restart = restarts;
        a.number = number++;
        if (elastic) {
            int more = read_grow(&o);
            if (more > 0) {
                int before = width;
                while (more-- > 0 && width < max_width)
                    slots[width++] = next_slot++;
                say("elastic: %d slot%s added (%d -> %d workers)", width - before,
                    width - before == 1 ? "" : "s", before, width);
            }
        }
        a.local_world = width;
        a.group_world = elastic ? 1 : o.nnodes_min;
        a.group_rank = elastic ? 0 : o.node_rank;
        a.world = elastic ? width : o.nnodes_min * o.nproc;
        a.rank0 = a.group_rank * width;
        /* A fresh name per attempt keeps a killed group's shared memory
         * apart from the next one's (the library cleans up stale ones too). */
        snprintf(a.job, sizeof a.job, "cputrain-run-%s-%d-%ld-%d", o.rdzv_id, o.master_port,
                 (long)getpid(), a.number);
        g.n = width;
        for (int i = 0; i < width; i++) {
            g.w[i].local_rank = i;
            g.w[i].rank = a.rank0 + i;
            g.w[i].slot = slots[i];
            g.w[i].pid = 0;
        }
        say("starting %d worker%s (ranks %d-%d of %d, restart %d of at most %d): %s", width,
            width == 1 ? "" : "s", a.rank0, a.rank0 + width - 1, a.world, restarts,
            o.max_restarts, argv[first]);
        r = run_attempt(&o, &a, &g, argv + first, NULL);
        if (r.grow && !r.failed && (pending_int == 0 && pending_term == 0)) {
            /* A planned widening uses up no restart (torchrun's membership
             * changes neither): TORCHELASTIC_RESTART_COUNT counts failures. */
            say("restarting wider (%s)", o.grow_file);
            continue;
        }
        if (r.signalled) {
            say("stopped by %s: exit %d", sig_name(r.signalled), r.code ? r.code : 128 + r.signalled);
            return r.code ? r.code : 128 + r.signalled;
        }
        if (!r.failed) {
            say("all %d worker%s finished", width, width == 1 ? "" : "s");
            return 0;
        }
        if (elastic && r.first_slot >= 0 && r.first_slot < MAX_WORKERS * 2) {
            for (int i = 0; i < width; i++)
                if (slots[i] != r.first_slot && slots[i] < MAX_WORKERS * 2)
                    fails_in_row[slots[i]] = 0;
            if (++fails_in_row[r.first_slot] >= o.drop_after && width > min_width) {
                int k = 0;
                for (int i = 0; i < width; i++)
                    if (slots[i] != r.first_slot)
                        slots[k++] = slots[i];
                say("elastic: slot %d failed %d times in a row: dropped (%d -> %d workers)",
                    r.first_slot, fails_in_row[r.first_slot], width, k);
                width = k;
            }
        }
        if (restarts >= o.max_restarts) {
            char how[128];
            describe(r.first_status, how, sizeof how);
            say("rank %d failed (%s) and the %d restart%s are used up: exit %d", r.first_rank,
                r.first_status ? how : "could not be started", o.max_restarts,
                o.max_restarts == 1 ? "" : "s", r.code ? r.code : 1);
            return r.code ? r.code : 1;
        }
        restarts++;
        say("restarting the group (restart %d of %d); the workers resume from their newest "
            "checkpoint", restarts, o.max_restarts);
    }
}
