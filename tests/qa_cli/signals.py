"""Ctrl-C and SIGTERM to cputrain-qa (issue 12, item 6), on tiny fixtures
written here: a first SIGINT (SIGTERM) stops training at the next step
boundary, saves a complete checkpoint and exits 130 (143) saying where;
resuming from it ends with a model.safetensors byte for byte that of an
uninterrupted run; a second signal kills the tool at once (it dies of the
signal, without finishing the save in progress); a signal before training
(during preprocessing) exits with the same code at once.

The run is slowed only where the test needs a moment to act: the library's
test hook CPUTRAIN_TEST_CHECKPOINT_PAUSE_MS pauses after each checkpoint
file, and the test waits for a checkpoint folder to appear (polling, no
fixed sleeps) before it sends the signal.

Usage: signals.py QA_BINARY WORK_DIR. Prints "qa_signals: N passed, M
failed"; exit status 1 when any failed."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

# What is tested is a terminal's Ctrl-C: the tools start with SIGINT at its
# default even when this test runs in the background, where the shell has
# it ignored (and the tools rightly keep an ignored SIGINT ignored).
signal.signal(signal.SIGINT, signal.SIG_DFL)

QA, WORK = sys.argv[1], sys.argv[2]
passed = failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("qa_signals: ok: " + name)
    else:
        failed += 1
        print("qa_signals: FAILED: " + name + ("\n  " + detail.replace("\n", "\n  | ")
                                               if detail else ""))


def fixtures():
    shutil.rmtree(WORK, ignore_errors=True)
    for sub in ("tok", "data", "squad"):
        os.makedirs(os.path.join(WORK, sub))
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "where", "did", "ana", "bo", "go",
             "live", "in", "paris", "rome", "oslo", "lima", "to", ".", "what", "is", "city"]
    with open(os.path.join(WORK, "tok/vocab.txt"), "w") as f:
        f.write("\n".join(words) + "\n")
    with open(os.path.join(WORK, "tok/tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": True, "model_max_length": 64}, f)
    # dropout on: resuming must put the dropout generator back too
    config = {"architectures": ["BertForQuestionAnswering"], "model_type": "bert",
              "vocab_size": 21, "hidden_size": 16, "num_hidden_layers": 2,
              "num_attention_heads": 2, "intermediate_size": 32, "hidden_act": "gelu",
              "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
              "max_position_embeddings": 64, "type_vocab_size": 2, "initializer_range": 0.02,
              "layer_norm_eps": 1e-12, "pad_token_id": 0}
    with open(os.path.join(WORK, "data/config.json"), "w") as f:
        json.dump(config, f)
    paragraphs = []
    for a, b, x, y in (("ana", "bo", "paris", "rome"), ("bo", "ana", "oslo", "lima"),
                       ("ana", "bo", "rome", "oslo"), ("bo", "ana", "lima", "paris")):
        context = "%s did live in %s . %s did go to %s ." % (a, x, b, y)
        paragraphs.append({"context": context, "qas": [
            {"id": "%s-%s-live" % (a, x), "question": "where did %s live" % a,
             "answers": [{"text": x, "answer_start": context.index(x)}]},
            {"id": "%s-%s-go" % (b, y), "question": "where did %s go" % b,
             "answers": [{"text": y, "answer_start": context.rindex(y)}]}]})
    with open(os.path.join(WORK, "squad/train.json"), "w") as f:
        json.dump({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}, f)


def args(out, *extra):
    return [QA, "--train_file", os.path.join(WORK, "squad/train.json"),
            "--config_name", os.path.join(WORK, "data/config.json"),
            "--tokenizer_name", os.path.join(WORK, "tok"), "--do_train",
            "--max_seq_length", "24", "--doc_stride", "8", "--per_device_train_batch_size", "2",
            "--learning_rate", "1e-3", "--max_steps", "12", "--save_steps", "2", "--seed", "42",
            "--logging_steps", "1", "--disable_tqdm", "--use_cpu", "--output_dir", out] + list(extra)


def start(out, pause_ms, *extra, python=False):
    env = dict(os.environ)
    if pause_ms:
        env["CPUTRAIN_TEST_CHECKPOINT_PAUSE_MS"] = str(pause_ms)
    log = open(out + ".log", "w")
    command = args(out, *extra)
    if python:  # the same run through python3 -m cputrain.run_qa
        command = [sys.executable, "-m", "cputrain.run_qa"] + command[1:]
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env), log


def wait_for(proc, path, what):
    """Poll until `path` exists (or the process ended): no fixed sleep."""
    while not os.path.exists(path):
        if proc.poll() is not None:
            return False
        time.sleep(0.02)
    return True


def text(path):
    with open(path, errors="replace") as f:
        return f.read()


def same_bytes(a, b):
    with open(a, "rb") as f, open(b, "rb") as g:
        return f.read() == g.read()


def state_step(directory):
    with open(os.path.join(directory, "trainer_state.json")) as f:
        return json.load(f)["global_step"]


def complete_checkpoints(out):
    return sorted(int(n.split("-")[1]) for n in os.listdir(out)
                  if n.startswith("checkpoint-") and
                  os.path.exists(os.path.join(out, n, "cputrain_checkpoint_complete")))


fixtures()

# The uninterrupted run every resumed one must equal.
full = os.path.join(WORK, "full")
p, log = start(full, 0)
rc = p.wait()
log.close()
check("uninterrupted run trains 12 steps", rc == 0 and state_step(full) == 12, text(full + ".log"))

for sig, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
    name = signal.Signals(sig).name
    out = os.path.join(WORK, "cut-" + name)
    # Each save pauses after every file: the run is still going when
    # checkpoint-2 has landed, and the signal reaches it mid-run.
    p, log = start(out, 150)
    reached = wait_for(p, os.path.join(out, "checkpoint-2"), "checkpoint-2")
    p.send_signal(sig)
    rc = p.wait()
    log.close()
    said = text(out + ".log")
    check("%s: reached checkpoint-2 before the signal" % name, reached, said)
    check("%s: exits %d" % (name, code), rc == code, "exit status %s\n%s" % (rc, said))
    saved = complete_checkpoints(out)
    last = saved[-1] if saved else None
    # the signal lands after checkpoint-2 is in place: the run stops at
    # that step boundary (nothing more to save) or a later one
    check("%s: a complete checkpoint from step 2 on is saved" % name,
          last is not None and 2 <= last < 12, "complete checkpoints: %s\n%s" % (saved, said))
    check("%s: says at which step it stopped and where the checkpoint is" % name,
          last is not None and ("stopping after step %d; checkpoint saved to %s/checkpoint-%d"
                                % (last, out, last)) in said, said)
    check("%s: the checkpoint and trainer_state.json agree on the step" % name,
          last is not None and state_step(os.path.join(out, "checkpoint-%d" % last)) == last and
          state_step(out) == last, said)
    check("%s: no final model was saved" % name,
          not os.path.exists(os.path.join(out, "model.safetensors")), said)
    p, log = start(out, 0, "--resume_from_checkpoint", "true")
    rc = p.wait()
    log.close()
    resumed = text(out + ".log")
    check("%s: resuming finishes the run" % name, rc == 0 and state_step(out) == 12, resumed)
    check("%s: the resumed model equals the uninterrupted one byte for byte" % name,
          rc == 0 and same_bytes(os.path.join(full, "model.safetensors"),
                                 os.path.join(out, "model.safetensors")), resumed)

# python3 -m cputrain.run_qa takes the same path (Trainer.train() turns the
# interrupt into a cancel; run_qa sends SIGTERM down the SIGINT path).
if os.environ.get("CPUTRAIN_LIBRARY"):
    for sig, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
        name = "run_qa.py " + signal.Signals(sig).name
        out = os.path.join(WORK, "py-" + signal.Signals(sig).name)
        p, log = start(out, 150, python=True)
        reached = wait_for(p, os.path.join(out, "checkpoint-2"), "checkpoint-2")
        p.send_signal(sig)
        rc = p.wait()
        log.close()
        said = text(out + ".log")
        saved = complete_checkpoints(out)
        check("%s: exits %d with a checkpoint from step 2 on" % (name, code),
              reached and rc == code and saved and saved[-1] >= 2,
              "exit status %s, checkpoints %s\n%s" % (rc, saved, said))
        check("%s: says where the checkpoint is" % name,
              saved and ("checkpoint saved to %s/checkpoint-%d" % (out, saved[-1])) in said, said)
        check("%s: no traceback" % name, "Traceback" not in said, said)

# A second SIGINT while the first one's checkpoint is being written: the
# tool dies of the signal at once, and no half checkpoint looks whole.
out = os.path.join(WORK, "twice")
p, log = start(out, 3000)
reached = wait_for(p, os.path.join(out, "checkpoint-2"), "checkpoint-2")
if reached:
    # the save of step 4 (or the cancel's own) has begun and is paused
    while p.poll() is None and not any(n.startswith("tmp-checkpoint-") for n in os.listdir(out)):
        time.sleep(0.02)
p.send_signal(signal.SIGINT)
while p.poll() is None and "SIGINT received" not in text(out + ".log"):
    time.sleep(0.02)
p.send_signal(signal.SIGINT)
rc = p.wait()
log.close()
said = text(out + ".log")
check("second SIGINT: the tool dies of SIGINT (not a clean exit after the save)",
      rc == -signal.SIGINT, "exit status %s\n%s" % (rc, said))
check("second SIGINT: only step 2's checkpoint is complete", complete_checkpoints(out) == [2],
      "%s\n%s" % (os.listdir(out), said))

# A signal while no trainer runs (evaluation of a saved model on many
# questions): out at once with the same code and a message, nothing to save.
out = os.path.join(WORK, "evalonly")
many = {"version": "1.1", "data": [{"title": "v", "paragraphs": [
    {"context": "ana did live in rome . bo did go to oslo .", "qas": [
        {"id": "q%d" % i, "question": "where did ana live",
         "answers": [{"text": "rome", "answer_start": 16}]} for i in range(20000)]}]}]}
with open(os.path.join(WORK, "squad/many.json"), "w") as f:
    json.dump(many, f)
log = open(out + ".log", "w")
p = subprocess.Popen([QA, "--model_name_or_path", full, "--validation_file",
                      os.path.join(WORK, "squad/many.json"), "--do_eval", "--max_seq_length", "24",
                      "--doc_stride", "8", "--per_device_eval_batch_size", "64", "--use_cpu",
                      "--output_dir", out], stdout=log, stderr=subprocess.STDOUT)
while p.poll() is None and "placement: rank 0" not in text(out + ".log"):
    time.sleep(0.01)
p.send_signal(signal.SIGTERM)
rc = p.wait()
log.close()
said = text(out + ".log")
check("SIGTERM during evaluation (no trainer): exits 143", rc == 143,
      "exit status %s\n%s" % (rc, said))
check("  ... saying so", "SIGTERM received: exiting (no training running, nothing to save)"
      in said, said)
check("  ... writing no results", not os.path.exists(os.path.join(out, "eval_results.json")), said)

print("qa_signals: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
