/* ct_workflow_check_best_metric: metric_for_best_model named against what the
 * script's evaluation reports, before training rather than at the first
 * evaluation (Trainer refuses it only there, after preprocessing and steps). */
#include <stdio.h>
#include <string.h>

#include <cputrain/cputrain.h>

#include "core/error.h"
#include "core/strbuf.h"
#include "workflow/workflow.h"

ct_status ct_workflow_check_best_metric(const ct_workflow *wf, const char *const *reported,
                                        size_t n)
{
    const char *metric = NULL, *name, *suggest;
    int best = 0, has_loss = 0;
    CT__CHECK_ARG(wf);
    if (n > 0)
        CT__CHECK_ARG(reported);
    ct_args_get_bool(wf->args, "load_best_model_at_end", &best);
    ct_args_get_string(wf->args, "metric_for_best_model", &metric);
    if (!metric && !best)
        return CT_OK;
    /* Trainer's default with load_best_model_at_end, and its eval_ prefix */
    name = !metric ? "loss" : strncmp(metric, "eval_", 5) == 0 ? metric + 5 : metric;
    for (size_t i = 0; i < n; i++) {
        CT__CHECK_ARG(reported[i]);
        if (strcmp(name, reported[i]) == 0)
            return CT_OK;
        has_loss |= strcmp(reported[i], "loss") == 0;
    }
    if (n == 0)
        return ct__error(CT_ERR_INVALID_ARG, "--metric_for_best_model %s: the evaluation of "
                         "%s reports no metrics", metric ? metric : "loss", wf->script);
    ct__strbuf sb = {0};
    char no_loss[96] = "";
    suggest = reported[0];
    for (size_t i = 0; i < n; i++) {
        ct__sb_printf(&sb, "%seval_%s", i ? ", " : "", reported[i]);
        if (strcmp(reported[i], "f1") == 0)
            suggest = "f1"; /* what run_qa users pick */
    }
    if (sb.failed) {
        ct__sb_free(&sb);
        return ct__error(CT_ERR_NOMEM, "--metric_for_best_model: out of memory");
    }
    if (!has_loss)
        snprintf(no_loss, sizeof no_loss, " (no loss, as in %s)", wf->script);
    ct_status st = ct__error(CT_ERR_INVALID_ARG, "--metric_for_best_model %s: the evaluation "
                             "reports %s%s; pass one of them, e.g. --metric_for_best_model %s",
                             metric ? metric : "loss (the default with --load_best_model_at_end)",
                             sb.data, no_loss, suggest);
    ct__sb_free(&sb);
    return st;
}
