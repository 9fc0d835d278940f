#!/usr/bin/python3
"""The guide's command as written, end to end, against the stand-in Hub
(tests/python/hub_server.py) on 127.0.0.1: cputrain-qa and Python's run_qa
download google-bert/bert-base-uncased and the squad dataset (Parquet
files written by DuckDB, an independent writer; "squad" renamed to
rajpurkar/squad as on the Hub) into an empty cache and train; the same
command trains offline (HF_HUB_OFFLINE=1, the server gone) from that cache;
a download cut half-way fails saying it will resume, and the next run
resumes it (a Range request); two ranks on one machine download once (the
cache's lock); cputrain-glue --task_name mrpc and cputrain-ner --dataset_name
conll2003 read their Hub datasets; --config_name takes a Hub id (its
config.json alone), a folder or a built-in name, in cputrain-qa and run_qa. usage: run.py BUILD_DIR. One line per check; exit status 1
when any failed, 77 when node or npm (DuckDB's) is missing."""

import hashlib
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))

from hub_server import HubServer, Repo  # noqa: E402
import fixtures  # noqa: E402  (tests/hub/fixtures.py, beside this file)

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
os.environ.setdefault("CPUTRAIN_LIBRARY", os.path.join(BUILD, "lib", "libcputrain.so.0"))
import cputrain  # noqa: E402

MODEL_ID = "google-bert/bert-base-uncased"
SQUAD_ID = "rajpurkar/squad"
WORK = os.path.join(BUILD, "hub-test")
failed = 0


def check(name, ok, detail=""):
    global failed
    print("hub: %s: %s" % ("ok" if ok else "FAILED", name))
    if not ok:
        failed += 1
        if detail:
            print("\n".join("  | " + line for line in detail.splitlines()[-25:]))


def make_fixtures():
    return fixtures.make_model_repo(WORK, ROOT)


def squad_parquet(data):
    return fixtures.squad_repo(WORK, BUILD, data)


def run(cmd, env_extra, cache):
    env = dict(os.environ, HF_HUB_CACHE=cache, HF_HUB_OFFLINE="0", HF_TOKEN="",
               OMP_NUM_THREADS="1")
    env.update(env_extra)
    return subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=600)


def guide_args(data, out):
    """The guide's command, with the data local and the run cut short."""
    return ["--model_name_or_path", MODEL_ID, "--train_file", os.path.join(data, "train.json"),
            "--validation_file", os.path.join(data, "validation.json"), "--do_train",
            "--do_eval", "--per_device_train_batch_size", "12", "--learning_rate", "3e-5",
            "--num_train_epochs", "2", "--max_seq_length", "128", "--doc_stride", "64",
            "--max_steps", "2", "--max_eval_samples", "8", "--output_dir", out, "--bf16",
            "--use_cpu", "--disable_tqdm", "true", "--overwrite_output_dir"]


def guide_command(out):
    """The guide's command as written (its own output folder aside), cut to
    two steps and eight evaluation examples."""
    return ["--model_name_or_path", MODEL_ID, "--dataset_name", "squad", "--do_train",
            "--do_eval", "--per_device_train_batch_size", "12", "--learning_rate", "3e-5",
            "--num_train_epochs", "2", "--max_seq_length", "384", "--doc_stride", "128",
            "--output_dir", out, "--bf16", "--use_cpu", "--max_steps", "2",
            "--max_eval_samples", "8", "--disable_tqdm", "true"]


def serve(files, squad):
    server = HubServer()
    server.add(Repo(MODEL_ID, files))
    server.add(Repo(SQUAD_ID, squad, repo_type="dataset"))
    server.renamed[("dataset", "squad")] = SQUAD_ID
    return server


def check_guide_command(data, files, squad):
    qa = os.path.join(BUILD, "bin", "cputrain-qa")
    server = serve(files, squad)
    hub = {"HF_ENDPOINT": server.endpoint}
    cache = os.path.join(WORK, "cache-guide")
    p = run([qa] + guide_command(os.path.join(WORK, "debug_squad")), hub, cache)
    check("the guide's command as written (Hub model, --dataset_name squad) trains and evaluates",
          p.returncode == 0 and "RANDOM" not in p.stdout and
          os.path.isfile(os.path.join(WORK, "debug_squad", "eval_results.json")), p.stdout)
    snapshots = os.path.join(cache, "datasets--squad", "snapshots")
    check("  ... the dataset's Parquet files are in the Hub cache (datasets--squad)",
          os.path.isdir(snapshots) and any(
              f.endswith(".parquet") for _, _, fs in os.walk(snapshots) for f in fs))
    with_data = [r for r in server.log if "/datasets/" in r[1]]
    server.close()
    p = run([qa] + guide_command(os.path.join(WORK, "debug_squad2")),
            dict(hub, HF_HUB_OFFLINE="1"), cache)
    check("  ... and again offline from the cache, the Hub gone", p.returncode == 0, p.stdout)
    check("  ... the rename squad -> rajpurkar/squad was followed",
          any("rajpurkar/squad" in r[1] for r in with_data))
    # the examples read from DuckDB's Parquet = the JSON lines they came from
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        from_hub = cputrain.SquadExamples.from_table(cputrain.Table.load_dataset(
            "squad", split="validation", cache_dir=cache))
    finally:
        del os.environ["HF_HUB_OFFLINE"]
    from_json = cputrain.SquadExamples.load(os.path.join(WORK, "validation.jsonl"))
    check("  ... its examples equal the JSON lines DuckDB wrote them from (%d)" % len(from_json),
          len(from_hub) == len(from_json) and
          all(from_hub[i] == from_json[i] for i in range(len(from_json))))
    py = [sys.executable, "-m", "cputrain.run_qa"] + guide_command(
        os.path.join(WORK, "debug_squad3"))
    p = run(py, dict(hub, HF_HUB_OFFLINE="1", PYTHONPATH=os.path.join(ROOT, "bindings", "python")),
            cache)
    check("  ... Python's run_qa: the same command, offline from the same cache", p.returncode == 0,
          p.stdout)


def check_task_datasets(files, data):
    """cputrain-glue --task_name, cputrain-ner and cputrain-mlm --dataset_name
    through the stand-in: nyu-mll/glue's mrpc files and conll2003 (renamed
    to eriktks/conll2003, a script dataset: its Parquet export only), the
    fuzz corpus's DuckDB files; wikitext (renamed to Salesforce/wikitext,
    configuration wikitext-2-raw-v1) of the demo's texts."""
    corpus = os.path.join(ROOT, "tests", "fuzz", "corpus", "parquet")
    with open(os.path.join(corpus, "glue_mrpc.uncompressed.parquet"), "rb") as f:
        mrpc = f.read()
    with open(os.path.join(corpus, "conll2003.zstd.parquet"), "rb") as f:
        conll = f.read()
    server = HubServer()
    server.add(Repo(MODEL_ID, files))
    server.add(Repo("nyu-mll/glue", {"mrpc/train-00000-of-00001.parquet": mrpc,
                                     "mrpc/validation-00000-of-00001.parquet": mrpc,
                                     "cola/train-00000-of-00001.parquet": mrpc},
                    repo_type="dataset"))
    script = server.add(Repo("eriktks/conll2003", {"conll2003.py": b"# a loading script"},
                             repo_type="dataset"))
    script.push({"conll2003/%s/0000.parquet" % split: conll
                 for split in ("train", "validation", "test")}, branch="refs/convert/parquet")
    server.renamed[("dataset", "conll2003")] = "eriktks/conll2003"
    server.add(Repo("Salesforce/wikitext", fixtures.text_repo(WORK, BUILD, data),
                    repo_type="dataset"))
    server.renamed[("dataset", "wikitext")] = "Salesforce/wikitext"
    hub = {"HF_ENDPOINT": server.endpoint}
    cache = os.path.join(WORK, "cache-tasks")
    short = ["--model_name_or_path", MODEL_ID, "--do_train", "--do_eval", "--max_steps", "1",
             "--per_device_train_batch_size", "4", "--disable_tqdm", "true"]
    for tool, args in (("cputrain-glue", ["--task_name", "mrpc"]),
                       ("cputrain-ner", ["--dataset_name", "conll2003"]),
                       ("cputrain-mlm", ["--dataset_name", "wikitext", "--dataset_config_name",
                                         "wikitext-2-raw-v1", "--max_seq_length", "64"])):
        out = os.path.join(WORK, tool)
        p = run([os.path.join(BUILD, "bin", tool)] + short + args + ["--output_dir", out], hub,
                cache)
        check("%s %s from the Hub (Parquet) trains and evaluates" % (tool, " ".join(args)),
              p.returncode == 0 and os.path.isfile(os.path.join(out, "eval_results.json")),
              p.stdout)
    # shards that disagree on a column's kind are refused, naming the shard
    server.add(Repo("org/mixed", fixtures.mixed_shards(WORK, BUILD), repo_type="dataset"))
    p = run([os.path.join(BUILD, "bin", "cputrain-glue")] + short +
            ["--dataset_name", "org/mixed", "--output_dir", os.path.join(WORK, "mixed")], hub,
            cache)
    check("shards whose column kinds disagree are refused (not read as NULL labels)",
          p.returncode != 0 and "mixes types" in p.stdout and
          "train-00001-of-00002.parquet" in p.stdout, p.stdout)
    server.close()


def config_args(data, out, name):
    """The guide's arguments starting from --config_name (no weights)."""
    args = guide_args(data, out)
    i = args.index("--model_name_or_path")
    return args[:i] + ["--config_name", name, "--tokenizer_name", data] + args[i + 2:]


def check_config_name(data, server, hub, qa, sha):
    """--config_name as AutoConfig takes it: a Hub id gives its config.json
    alone (no weights fetched), a folder its config.json, a built-in name
    its configuration offline; in cputrain-qa and in Python's run_qa."""
    py = [sys.executable, "-m", "cputrain.run_qa"]
    pyenv = {"PYTHONPATH": os.path.join(ROOT, "bindings", "python")}
    for tool, cmd, env in (("cputrain-qa", [qa], {}), ("run_qa", py, pyenv)):
        cache = os.path.join(WORK, "cache-config-" + tool)
        weights_before = len(server.requests("GET", "/store/" + sha))
        p = run(cmd + config_args(data, os.path.join(WORK, "out-config"), MODEL_ID),
                dict(hub, **env), cache)
        snapshot = os.path.join(cache, "models--google-bert--bert-base-uncased", "snapshots",
                                server.repos[("model", MODEL_ID)].refs["main"])
        check("%s --config_name %s: its config.json from the Hub, no weights fetched" %
              (tool, MODEL_ID),
              p.returncode == 0 and os.path.isfile(os.path.join(snapshot, "config.json")) and
              not os.path.exists(os.path.join(snapshot, "model.safetensors")) and
              len(server.requests("GET", "/store/" + sha)) == weights_before, p.stdout)
        for name, what in ((data, "a folder holding config.json"),
                           ("bert-tiny", "a built-in name, offline")):
            p = run(cmd + config_args(data, os.path.join(WORK, "out-config"), name),
                    dict(hub, HF_HUB_OFFLINE="1", **env), os.path.join(WORK, "cache-empty"))
            check("%s --config_name %s" % (tool, what),
                  p.returncode == 0 and "RANDOM" not in p.stdout, p.stdout)


def main():
    for tool in ("node", "npm"):
        if not shutil.which(tool):
            print("hub: SKIPPED: %s not found (scripts/install-deps.sh installs it)" % tool)
            return 77
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    data, files = make_fixtures()
    check_guide_command(data, files, squad_parquet(data))
    check_task_datasets(files, data)
    server = HubServer()
    server.add(Repo(MODEL_ID, files))
    hub = {"HF_ENDPOINT": server.endpoint}
    qa = os.path.join(BUILD, "bin", "cputrain-qa")
    sha = hashlib.sha256(files["model.safetensors"]).hexdigest()

    cache = os.path.join(WORK, "cache")
    p = run([qa] + guide_args(data, os.path.join(WORK, "out1")), hub, cache)
    snapshot = os.path.join(cache, "models--google-bert--bert-base-uncased", "snapshots",
                            server.repos[("model", MODEL_ID)].refs["main"])
    check("cputrain-qa --model_name_or_path %s into an empty cache trains (exit 0)" % MODEL_ID,
          p.returncode == 0 and "RANDOM" not in p.stdout, p.stdout)
    check("  ... the snapshot is in the cache, huggingface_hub's layout",
          all(os.path.islink(os.path.join(snapshot, n)) for n in files))
    check("  ... eval_results.json written",
          os.path.isfile(os.path.join(WORK, "out1", "eval_results.json")))

    served = len(server.log)
    server.close()
    p = run([qa] + guide_args(data, os.path.join(WORK, "out2")), dict(hub, HF_HUB_OFFLINE="1"),
            cache)
    check("HF_HUB_OFFLINE=1, the Hub gone: the same command trains from the cache",
          p.returncode == 0 and "RANDOM" not in p.stdout, p.stdout)
    p = run([qa] + guide_args(data, os.path.join(WORK, "out3")), hub, cache)
    check("the Hub unreachable: the cached snapshot serves, said once",
          p.returncode == 0 and p.stdout.count("could not be reached") == 1, p.stdout)

    server = HubServer()
    server.add(Repo(MODEL_ID, files))
    hub = {"HF_ENDPOINT": server.endpoint}
    server.drop_once.add(sha)
    cache = os.path.join(WORK, "cache-resume")
    p = run([qa] + guide_args(data, os.path.join(WORK, "out4")), hub, cache)
    check("a download cut half-way fails, saying to run again to resume",
          p.returncode != 0 and "run again to resume" in p.stdout, p.stdout)
    p = run([qa] + guide_args(data, os.path.join(WORK, "out4")), hub, cache)
    ranges = [r[2].get("Range") for r in server.requests("GET", "/store/" + sha)]
    check("  ... the next run resumes it (Range: bytes=N-) and trains",
          p.returncode == 0 and len(ranges) == 2 and ranges[1] is not None, p.stdout)

    cache = os.path.join(WORK, "cache-ranks")
    runner = os.path.join(BUILD, "bin", "cputrain-run")
    p = run([runner, "--nproc_per_node", "2", qa] + guide_args(data, os.path.join(WORK, "out5")),
            hub, cache)
    gets = len(server.requests("GET", "/store/" + sha))
    check("two ranks on one machine: trains, the weights downloaded once (the cache's lock)",
          p.returncode == 0 and gets == 3, p.stdout + "\nstore GETs: %d" % gets)

    py = [sys.executable, "-m", "cputrain.run_qa"] + guide_args(data, os.path.join(WORK, "out6"))
    p = run(py, dict(hub, PYTHONPATH=os.path.join(ROOT, "bindings", "python")),
            os.path.join(WORK, "cache-python"))
    check("Python's run_qa: the same command downloads and trains",
          p.returncode == 0 and "RANDOM" not in p.stdout, p.stdout)
    p = run(py, dict(hub, HF_HUB_OFFLINE="1", PYTHONPATH=os.path.join(ROOT, "bindings", "python")),
            cache)
    check("  ... and trains offline from the cache cputrain-qa filled", p.returncode == 0,
          p.stdout)
    check_config_name(data, server, hub, qa, sha)
    server.close()
    print("hub: %d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
