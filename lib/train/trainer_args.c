/* Settings the trainer takes from its arguments at the start of a run:
 * the process's log level (log_level / log_level_replica, as Trainer's
 * get_process_log_level) and the model's loss options. Kept apart from the
 * loop in trainer.c. */
#include "train/trainer.h"

#include "core/error.h"
#include "args/args_internal.h"

#include <string.h>

/* "passive" is -1: leave the application's level. */
static int level_of(const char *name)
{
    static const struct {
        const char *name;
        ct_log_level level;
    } levels[] = {{"debug", CT_LOG_DEBUG},     {"info", CT_LOG_INFO},
                  {"warning", CT_LOG_WARNING}, {"error", CT_LOG_ERROR},
                  {"critical", CT_LOG_ERROR}};
    for (size_t i = 0; name && i < sizeof levels / sizeof levels[0]; i++)
        if (strcmp(name, levels[i].name) == 0)
            return (int)levels[i].level;
    return -1;
}

void ct__trainer_apply_log_level(const ct_args *args, int rank, int local_rank)
{
    /* Trainer's should_log: the main process, or with log_on_each_node the
     * first process of each machine. */
    int main_process = rank == 0 || (ct__args_bool(args, CT_A_log_on_each_node) && local_rank == 0);
    int level = level_of(ct__args_string(args, main_process ? CT_A_log_level
                                                            : CT_A_log_level_replica));
    if (level >= 0)
        ct_log_set_level((ct_log_level)level);
}

ct_status ct__trainer_apply_model_args(const ct_args *args, ct_model *m, int rank)
{
    double eps = ct__args_float(args, CT_A_label_smoothing_factor);
    static int said;
    /* Trainer applies its LabelSmoother only to inputs that carry "labels";
     * question answering passes start and end positions instead, so there
     * the factor changes nothing, in Transformers as here. */
    if (eps > 0 && ct_model_get_task(m) == CT_TASK_QUESTION_ANSWERING && rank == 0 &&
        !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        ct__log(CT_LOG_WARNING, "--label_smoothing_factor %g has no effect on question "
                                "answering: Trainer smooths only `labels` (classification, "
                                "masked LM), not start/end positions", eps);
    /* Fields kept for compatibility whose other values change nothing here
     * say so, as the fate table's no-effect names do. */
    static int said_length;
    if (rank == 0 && ct__args_bool(args, CT_A_group_by_length) &&
        strcmp(ct__args_string(args, CT_A_length_column_name), "length") != 0 &&
        !__atomic_exchange_n(&said_length, 1, __ATOMIC_RELAXED))
        ct__log(CT_LOG_WARNING, "--length_column_name %s has no effect here: group_by_length "
                                "uses each example's real tokens (its attention mask)",
                ct__args_string(args, CT_A_length_column_name));
    return ct_model_set_label_smoothing(m, eps);
}
