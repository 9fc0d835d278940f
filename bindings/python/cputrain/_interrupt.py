"""Ctrl-C during Trainer.train(): a clean cancel instead of an exception
thrown into a ctypes callback.

While ct_trainer_train runs, Python's own SIGINT handler cannot run: the
interpreter only runs handlers between bytecodes of the main thread, that
is inside one of the trainer's Python callbacks (the default handler's
KeyboardInterrupt then escapes the callback: "Exception ignored", and
training goes on), or after the whole run. So train() installs a handler
that only counts the interrupts, and the trainer's progress trampoline,
which runs after every event, turns the first into ct_trainer_cancel (stop
at the next step boundary and save a checkpoint) and a second into a stop
without waiting for the save; train() then raises KeyboardInterrupt."""

import signal
import sys
import threading


class InterruptGuard:
    """SIGINT, for the length of one train() call, counted on `trainer`
    (its _interrupts attribute). Installed only in the main thread (the only
    one Python lets set handlers), and only over a handler Python can put
    back (not over SIG_IGN, nor one installed from C)."""

    def __init__(self, trainer):
        self._trainer = trainer
        self._previous = None
        self.active = False

    def install(self):
        if threading.current_thread() is not threading.main_thread():
            return False
        previous = signal.getsignal(signal.SIGINT)
        if previous is None or previous is signal.SIG_IGN:
            return False
        self._previous = previous
        signal.signal(signal.SIGINT, self._on_sigint)
        self.active = True
        return True

    def restore(self):
        if self.active:
            signal.signal(signal.SIGINT, self._previous)
            self.active = False

    def _on_sigint(self, signum, frame):
        # No exception from here: this may run at the first bytecode of a
        # ctypes callback, outside its try block.
        trainer = self._trainer
        trainer._interrupts += 1
        try:
            if trainer._interrupts == 1:
                sys.stderr.write("\ncputrain: interrupted: training stops after this step and "
                                 "saves a checkpoint (interrupt again to stop without saving)\n")
            elif trainer._interrupts == 2:
                sys.stderr.write("\ncputrain: interrupted again: stopping now, without a "
                                 "checkpoint\n")
        except Exception:  # noqa: B902 -- a closed stderr must not matter here
            pass
