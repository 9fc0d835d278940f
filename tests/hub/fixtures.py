"""The stand-in Hub's repositories shared by tests/hub/run.py and
tests/docs/run.py: a small pre-trained-looking BERT (the demo's
configuration with BERT's 512 positions, saved by the library) as
google-bert/bert-base-uncased's files, and the demo's SQuAD splits as the
Hub's rajpurkar/squad Parquet files, written by DuckDB (an independent
writer)."""

import json
import os
import subprocess
import sys

import cputrain

HERE = os.path.dirname(os.path.abspath(__file__))
DUCKDB = "@duckdb/node-api@1.5.6-r.1"  # pinned, as tests/formats/parquet.sh pins it


def make_model_repo(work, root):
    """The demo's data and vocabulary, and a small pre-trained-looking model
    (the demo's configuration, saved) as the Hub repo's files."""
    data = os.path.join(work, "data")
    subprocess.run([sys.executable, os.path.join(root, "data", "demo", "generate.py"), data,
                    "--train-people", "20", "--eval-people", "5"], check=True,
                   stdout=subprocess.DEVNULL)
    # BERT's 512 positions, so that the guide's --max_seq_length 384 fits
    for name, key in (("config.json", "max_position_embeddings"),
                      ("tokenizer_config.json", "model_max_length")):
        with open(os.path.join(data, name)) as f:
            settings = json.load(f)
        settings[key] = 512
        with open(os.path.join(data, name), "w") as f:
            json.dump(settings, f)
    model_dir = os.path.join(work, "model")
    model = cputrain.Model.create(os.path.join(data, "config.json"), "question-answering",
                                  seed=7)
    model.save(model_dir)
    files = {}
    for name in ("config.json", "model.safetensors"):
        with open(os.path.join(model_dir, name), "rb") as f:
            files[name] = f.read()
    for name in ("vocab.txt", "tokenizer_config.json"):
        with open(os.path.join(data, name), "rb") as f:
            files[name] = f.read()
    return data, files


def duckdb_modules(build):
    """node_modules holding DuckDB (installed beside tests/formats/parquet.sh's
    when missing: the npm registry is the only network this needs)."""
    npm = os.path.join(build, "parquet-writer", "npm")
    modules = os.path.join(npm, "node_modules")
    if not os.path.isdir(os.path.join(modules, "@duckdb", "node-api")):
        subprocess.run(["npm", "install", "--prefix", npm, "--no-audit", "--no-fund",
                        "--no-save", "--loglevel=error", DUCKDB], check=True)
    return modules


def squad_repo(work, build, data):
    """The Hub's rajpurkar/squad files of the demo's splits: datasets' flat
    records, written to Parquet by DuckDB (snappy, as the Hub's are)."""
    modules, files = duckdb_modules(build), {}
    for split in ("train", "validation"):
        with open(os.path.join(data, split + ".json")) as f:
            articles = json.load(f)["data"]
        flat = os.path.join(work, split + ".jsonl")
        with open(flat, "w") as f:
            for a in articles:
                for p in a["paragraphs"]:
                    for q in p["qas"]:
                        f.write(json.dumps({
                            "id": q["id"], "title": a["title"], "context": p["context"],
                            "question": q["question"],
                            "answers": {"text": [x["text"] for x in q["answers"]],
                                        "answer_start": [x["answer_start"]
                                                         for x in q["answers"]]}}) + "\n")
        out = os.path.join(work, split + ".parquet")
        subprocess.run(["node", os.path.join(HERE, "to_parquet.js"), flat, out, "snappy"],
                       env=dict(os.environ, NODE_PATH=modules), check=True)
        with open(out, "rb") as f:
            files["plain_text/%s-00000-of-00001.parquet" % split] = f.read()
    files["README.md"] = b"---\nconfigs:\n- config_name: plain_text\n---\n"
    return files


def text_repo(work, build, data):
    """A wikitext-like repo of the demo's contexts, one text a row (column
    "text"), in configuration wikitext-2-raw-v1's folder, written by DuckDB
    (zstd); its validation split holds other texts than its training one."""
    modules, files = duckdb_modules(build), {}
    for split in ("train", "validation"):
        with open(os.path.join(data, split + ".json")) as f:
            texts = [p["context"] for a in json.load(f)["data"] for p in a["paragraphs"]]
        flat = os.path.join(work, "text-%s.jsonl" % split)
        with open(flat, "w") as f:
            for text in texts:
                f.write(json.dumps({"text": text}) + "\n")
        out = os.path.join(work, "text-%s.parquet" % split)
        subprocess.run(["node", os.path.join(HERE, "to_parquet.js"), flat, out, "zstd",
                        "{text: 'VARCHAR'}"], env=dict(os.environ, NODE_PATH=modules), check=True)
        with open(out, "rb") as f:
            files["wikitext-2-raw-v1/%s-00000-of-00001.parquet" % split] = f.read()
    return files


def mixed_shards(work, build):
    """Two Parquet shards of one split that disagree on a column's kind
    ("label" a number in one, a list of strings in the other), written by
    DuckDB."""
    modules, out = duckdb_modules(build), []
    for k, (rows, columns) in enumerate((
            ([{"text": "a good day", "label": 1}], "{text: 'VARCHAR', label: 'BIGINT'}"),
            ([{"text": "a bad day", "label": ["neg"]}], "{text: 'VARCHAR', label: 'VARCHAR[]'}"))):
        flat = os.path.join(work, "mixed-%d.jsonl" % k)
        with open(flat, "w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
        path = os.path.join(work, "mixed-%d.parquet" % k)
        subprocess.run(["node", os.path.join(HERE, "to_parquet.js"), flat, path, "snappy",
                        columns], env=dict(os.environ, NODE_PATH=modules), check=True)
        with open(path, "rb") as f:
            out.append(f.read())
    return {"default/train-00000-of-00002.parquet": out[0],
            "default/train-00001-of-00002.parquet": out[1],
            "default/validation-00000-of-00001.parquet": out[0]}
