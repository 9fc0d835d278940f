/* ct_workflow: joining the job, each rank's log level, output_dir held for
 * the whole run, results files and progress bars of an example script. */
#include "workflow/workflow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args/args_internal.h"
#include "core/clock.h"
#include "core/error.h"
#include "train/metrics_file.h"

#define WF_BOOL(f) ct__args_bool(wf->args, CT_A_##f)
#define WF_STR(f) ct__args_string(wf->args, CT_A_##f)

ct_status ct_workflow_create(const char *script, ct_args *args, ct_workflow **out)
{
    ct_workflow *wf;
    CT__CHECK_ARG(out);
    *out = NULL;
    CT__CHECK_ARG(script);
    CT__CHECK_ARG(args);
    if (!(wf = calloc(1, sizeof *wf)) || !(wf->script = strdup(script))) {
        free(wf);
        return ct__error(CT_ERR_NOMEM, "ct_workflow_create: out of memory");
    }
    wf->args = args;
    wf->world = 1;
    *out = wf;
    return CT_OK;
}

void ct_workflow_free(ct_workflow *wf)
{
    if (!wf)
        return;
    ct_output_lock_free(wf->lock);
    ct_dist_free(wf->dist);
    free(wf->script);
    free(wf);
}

/* Trainer's get_process_log_level: "passive" leaves the script's own
 * default (info on the main process, warning on the replicas). */
static ct_log_level level_named(const char *name, int main_process)
{
    static const struct {
        const char *name;
        ct_log_level level;
    } levels[] = {{"debug", CT_LOG_DEBUG},     {"info", CT_LOG_INFO},
                  {"warning", CT_LOG_WARNING}, {"error", CT_LOG_ERROR},
                  {"critical", CT_LOG_ERROR}};
    for (size_t i = 0; name && i < sizeof levels / sizeof levels[0]; i++)
        if (!strcmp(name, levels[i].name))
            return levels[i].level;
    return main_process ? CT_LOG_INFO : CT_LOG_WARNING;
}

ct_status ct_workflow_join(ct_workflow *wf)
{
    ct_dist_options *o = NULL;
    char timeout[32];
    ct_status st;
    int main_process;
    CT__CHECK_ARG(wf);
    if (wf->dist)
        return ct__error(CT_ERR_STATE, "ct_workflow_join: the job is joined already");
    snprintf(timeout, sizeof timeout, "%lld",
             (long long)ct__args_int(wf->args, CT_A_ddp_timeout));
    if ((st = ct_dist_options_create(&o)) != CT_OK ||
        (WF_STR(ddp_backend) && (st = ct_dist_options_set(o, "backend", WF_STR(ddp_backend))) !=
                                    CT_OK) ||
        (st = ct_dist_options_set(o, "timeout", timeout)) != CT_OK ||
        (st = ct_dist_create(o, &wf->dist)) != CT_OK) {
        ct_dist_options_free(o);
        return st;
    }
    ct_dist_options_free(o);
    wf->rank = ct_dist_rank(wf->dist);
    wf->world = ct_dist_world_size(wf->dist);
    wf->local_rank = ct_dist_local_rank(wf->dist);
    main_process = wf->rank == 0 || (WF_BOOL(log_on_each_node) && wf->local_rank == 0);
    ct_log_set_level(level_named(main_process ? WF_STR(log_level) : WF_STR(log_level_replica),
                                 main_process));
    return CT_OK;
}

ct_dist *ct_workflow_dist(const ct_workflow *wf)
{
    return wf ? wf->dist : NULL;
}

int ct_workflow_is_main(const ct_workflow *wf)
{
    return wf && wf->rank == 0;
}

ct_status ct_workflow_hold_output_dir(ct_workflow *wf, int training)
{
    const char *dir;
    float refused = 0.0f;
    ct_status st = CT_OK;
    int writes;
    CT__CHECK_ARG(wf);
    if (!(dir = WF_STR(output_dir)))
        return ct__error(CT_ERR_INVALID_ARG, "output_dir: the run needs one");
    writes = wf->rank == 0 || (WF_BOOL(save_on_each_node) && wf->local_rank == 0);
    if (writes && !wf->lock && (st = ct_output_lock_create(dir, &wf->lock)) != CT_OK)
        refused = 1.0f;
    /* Every rank learns whether all got it, so none waits for a rank that
     * gave up until the job's timeout. */
    if (wf->world > 1) {
        char why[512];
        snprintf(why, sizeof why, "%s", st != CT_OK ? ct_last_error() : "");
        if (ct_dist_allreduce(wf->dist, &refused, 1, CT_DTYPE_F32, CT_REDUCE_SUM) != CT_OK)
            return CT_ERR_DIST;
        if (st != CT_OK)
            return ct__error(st, "%s", why);
        if (refused != 0.0f)
            return ct__error(CT_ERR_DIST, "output_dir %s: another rank could not hold it", dir);
    }
    if (st != CT_OK)
        return st;
    return training ? ct__workflow_output_dir_rule(wf) : CT_OK;
}

void ct_workflow_progress(ct_workflow *wf, const char *what, size_t done, size_t total)
{
    static const char hashes[] = "##############################";
    int width = 30, filled;
    double spent;
    if (!wf || wf->rank != 0 || WF_BOOL(disable_tqdm) || !isatty(STDERR_FILENO) || !what)
        return;
    if (!wf->bar_started || done == 0)
        wf->bar_started = ct__now_s();
    if (!total || done >= total) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        wf->bar_started = 0;
        return;
    }
    spent = ct__now_s() - wf->bar_started;
    filled = (int)((size_t)width * done / total);
    fprintf(stderr, "\r%s: %3d%%|%.*s%*s| %zu/%zu [%.0fs, %.2f it/s]\033[K", what,
            (int)(100 * done / total), filled, hashes, width - filled, "", done, total, spent,
            spent > 0 ? (double)done / spent : 0.0);
    fflush(stderr);
}

ct_status ct_workflow_save_metrics(const ct_workflow *wf, const char *split,
                                   const char *const *names, const double *values,
                                   const int *is_int, size_t n)
{
    ct__metric *m;
    ct_status st;
    CT__CHECK_ARG(wf);
    CT__CHECK_ARG(split);
    if (n && (!names || !values))
        return ct__error(CT_ERR_INVALID_ARG, "ct_workflow_save_metrics: %zu metrics without "
                         "names or values", n);
    if (wf->rank != 0)
        return CT_OK;
    if (!(m = malloc((n ? n : 1) * sizeof *m)))
        return ct__error(CT_ERR_NOMEM, "ct_workflow_save_metrics: out of memory");
    for (size_t i = 0; i < n; i++) {
        if (!names[i]) {
            free(m);
            return ct__error(CT_ERR_INVALID_ARG, "ct_workflow_save_metrics: metric %zu has no "
                             "name", i);
        }
        m[i] = (ct__metric){names[i], values[i], is_int ? is_int[i] : 0};
    }
    st = ct__save_metrics(WF_STR(output_dir), split, m, n);
    free(m);
    return st;
}
