/* The frame of a tool's main: what every example script does before its
 * task's part (names, held log, signals, arguments, the run's switches),
 * joining the job and holding output_dir, training, and the end. */
#include "script.h"

#include <stdio.h>
#include <string.h>

int script_start(script_run *s, const char *prog, const char *script, int argc, char **argv,
                 const script_option *table, size_t n, void *values,
                 const char *const *groups, void (*usage)(void))
{
    const char *strategy = NULL;
    ct_status st;
    int parsed;
    /* whole lines on stdout even when piped, so they interleave with stderr's */
    setvbuf(stdout, NULL, _IOLBF, 0);
    script_prog = prog;
    script_name = script;
    /* Held at INFO until this process knows its rank (what joining the job
     * logs is information); then script_release_log prints what this
     * process's level keeps. */
    script_hold_log();
    ct_log_set_level(CT_LOG_INFO);
    script_catch_signals();
    s->seed = 42;
    if ((st = ct_args_create(&s->args)) != CT_OK)
        return script_fail("arguments", st);
    if ((parsed = script_parse_args(s->args, argc, argv, table, n, values, groups, usage)) != 0)
        return parsed == 1 ? 0 : 2;
    ct_args_get_bool(s->args, "do_train", &s->do_train);
    ct_args_get_bool(s->args, "do_eval", &s->do_eval);
    ct_args_get_bool(s->args, "do_predict", &s->do_predict);
    ct_args_get_string(s->args, "output_dir", &s->output_dir);
    ct_args_get_int(s->args, "seed", &s->seed);
    /* TrainingArguments: an eval_strategy other than "no" sets do_eval, so
     * its need for validation data is known before any work */
    ct_args_get_string(s->args, "eval_strategy", &strategy);
    if (strategy && strcmp(strategy, "no") != 0 && !s->do_eval) {
        s->do_eval = 1;
        ct_args_set_bool(s->args, "do_eval", 1);
    }
    return -1;
}

int script_join(script_run *s)
{
    ct_status st;
    int each_node = 1;
    if ((st = ct_workflow_create(script_name, s->args, &s->wf)) != CT_OK ||
        (st = ct_workflow_join(s->wf)) != CT_OK)
        return script_fail("distributed setup", st);
    s->dist = ct_workflow_dist(s->wf);
    s->rank = ct_dist_rank(s->dist);
    /* the workflow set this process's level: the release keeps what it keeps */
    ct_args_get_bool(s->args, "log_on_each_node", &each_node);
    script_release_log(s->rank == 0 || (each_node && ct_dist_local_rank(s->dist) == 0));
    if (s->rank != 0)
        script_quiet_signals();
    if (s->rank == 0 && ct_dist_world_size(s->dist) > 1)
        fprintf(stderr, "%s: %d processes (backend %s, launcher %s)\n", script_prog,
                ct_dist_world_size(s->dist), ct_dist_backend(s->dist),
                ct_dist_launcher(s->dist));
    /* output_dir is this run's from before its first file to after its
     * last, and the scripts' rule for what is already there is read under
     * the lock (a refusal by that rule is a usage error) */
    if ((st = ct_workflow_hold_output_dir(s->wf, s->do_train)) != CT_OK) {
        script_fail("output_dir", st);
        return st == CT_ERR_INVALID_ARG ? 2 : 1;
    }
    return 0;
}

int script_fit(const script_run *s, ct_trainer *trainer, const ct_dataset *train)
{
    ct_status st;
    if ((st = ct_trainer_set_train_dataset(trainer, train)) != CT_OK ||
        (s->rank == 0 &&
         (st = ct_trainer_set_progress_to_terminal(trainer)) !=
             CT_OK))
        return script_fail("training", st);
    return script_train(trainer, s->output_dir, s->rank);
}

void script_end(script_run *s)
{
    script_release_log(1); /* anything still held: an exit before the rank was known */
    ct_workflow_free(s->wf);
    ct_args_free(s->args);
    memset(s, 0, sizeof *s);
}
