/* Kubernetes stops a pod with SIGTERM, a terminal with SIGINT. While the
 * trainer runs, the first one asks it to stop at the next step boundary and
 * save a checkpoint (ct_trainer_cancel only sets a flag, so it is safe
 * here); outside training there is nothing to save and the tool exits at
 * once. A second signal takes the default action: exit now. */
#include "script.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static ct_trainer *volatile training; /* set while ct_trainer_train runs */
static volatile sig_atomic_t got_signal, quiet;

/* write(2) only: this runs in the handler. */
static void say(const char *text)
{
    if (!quiet && write(STDERR_FILENO, text, strlen(text)) < 0)
        return; /* nothing to do about it in a handler */
}

static void on_signal(int sig)
{
    ct_trainer *t = training;
    if (got_signal) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigaction(sig, &dfl, NULL);
        raise(sig); /* delivered when this handler returns */
        return;
    }
    got_signal = sig;
    say("\n");
    say(script_prog);
    say(sig == SIGINT ? ": SIGINT received" : ": SIGTERM received");
    if (!t) {
        say(": exiting (no training running, nothing to save)\n");
        _exit(128 + sig);
    }
    say(": stopping after this step and saving a checkpoint (once more to exit at once)\n");
    ct_trainer_cancel(t);
}

/* A signal ignored when the tool started (nohup, `cmd &` in a script)
 * stays ignored, as the shell meant. */
void script_catch_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM};
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT); /* one handler at a time */
    sigaddset(&sa.sa_mask, SIGTERM);
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
}

static void set_training(ct_trainer *trainer)
{
    training = trainer;
    if (trainer && got_signal) /* came while the trainer was being made */
        ct_trainer_cancel(trainer);
}

void script_quiet_signals(void)
{
    quiet = 1;
}

static const char *signal_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : "SIGTERM";
}

/* After ct_trainer_train returned `st` with a signal received: what
 * happened and where to resume from. The exit status is 128 + signal, as
 * a shell reports a process the signal stopped (130, 143). */
static int stopped_by_signal(ct_trainer *t, ct_status st, const char *output_dir, int rank)
{
    long long step = (long long)ct_trainer_global_step(t);
    const char *name = signal_name(got_signal);
    if (rank != 0) /* rank 0 speaks for the job */
        return 128 + got_signal;
    if (st == CT_OK)
        fprintf(stderr, "%s: %s came as training ended: the model is saved in %s; "
                        "evaluation skipped\n", script_prog, name, output_dir);
    else if (st == CT_ERR_CANCELLED && strstr(ct_last_error(), "before its first step"))
        fprintf(stderr, "%s: %s: stopped before the first step; nothing saved\n", script_prog,
                name);
    else if (st == CT_ERR_CANCELLED)
        fprintf(stderr, "%s: %s: stopping after step %lld; checkpoint saved to "
                        "%s/checkpoint-%lld (resume with --resume_from_checkpoint "
                        "%s/checkpoint-%lld or --resume_from_checkpoint true)\n",
                script_prog, name, step, output_dir, step, output_dir, step);
    else
        fprintf(stderr, "%s: %s: training stopped, but: %s: %s\n", script_prog, name,
                ct_status_name(st), ct_last_error());
    return 128 + got_signal;
}

int script_train(ct_trainer *trainer, const char *output_dir, int rank)
{
    ct_status st;
    set_training(trainer);
    st = ct_trainer_train(trainer);
    set_training(NULL);
    if (got_signal)
        return stopped_by_signal(trainer, st, output_dir, rank);
    return st == CT_OK ? 0 : script_fail("training", st);
}
