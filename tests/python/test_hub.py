"""The Hub client (hub.h) against the stand-in Hub of hub_server.py on
127.0.0.1: huggingface_hub's cache layout, offline and unreachable rules,
resumed downloads, the errors of 401/403/404, one download per machine
under the lock, and hostile answers that must never write outside the
cache; and ct_table_load_dataset's choice of files (configurations,
shards, the Parquet export, the datasets cache's Arrow files), on the
fuzz corpus's Parquet and Arrow files (written by DuckDB and apache-arrow)."""

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from cputrain import CputrainError, Status, Table, hub_download, model_folder
from hub_server import SLOW_FOR, ErrorPage, HubServer, Repo, git_blob_id

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus")
CONFIG = b'{"architectures": ["BertForMaskedLM"], "model_type": "bert"}'
VOCAB = b"[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n"


def weights(n):
    return bytes((i * 7 + n) % 251 for i in range(50000 + n))


@contextlib.contextmanager
def environ(**values):
    """os.environ with `values` set (None: unset) for the block."""
    saved = {k: os.environ.get(k) for k in values}
    try:
        for k, v in values.items():
            os.environ.pop(k, None)
            if v is not None:
                os.environ[k] = v
        yield
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None)
            if v is not None:
                os.environ[k] = v


def sent_of(server, key, count=1):
    """The byte counts of the error pages sent under key, once the server's
    handlers have written them (they finish after the client hangs up)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with server.lock:
            sent = list(server.sent.get(key, []))
        if len(sent) >= count:
            return sent
        time.sleep(0.05)
    raise AssertionError("the server never finished sending %r" % (key,))


class HubTest(unittest.TestCase):
    def setUp(self):
        # make check runs offline; these tests talk to the stand-in alone
        self.offline = os.environ.pop("HF_HUB_OFFLINE", None)
        self.server = HubServer()
        self.tmp = tempfile.mkdtemp(prefix="cputrain-hub-")
        self.cache = os.path.join(self.tmp, "cache")
        self.opts = {"endpoint": self.server.endpoint, "cache_dir": self.cache, "token": ""}
        self.tiny = self.server.add(Repo("org/tiny", {
            "config.json": CONFIG, "model.safetensors": weights(1), "vocab.txt": VOCAB}))

    def tearDown(self):
        if self.offline is not None:
            os.environ["HF_HUB_OFFLINE"] = self.offline
        self.server.close()
        shutil.rmtree(self.tmp)

    def assert_error(self, status, text, fn, *args, **kwargs):
        with self.assertRaises(CputrainError) as cm:
            fn(*args, **kwargs)
        self.assertEqual(cm.exception.status, status, str(cm.exception))
        self.assertIn(text, str(cm.exception))
        return str(cm.exception)

    def files_outside_cache(self):
        found = []
        for root, _, files in os.walk(self.tmp):
            if not root.startswith(self.cache):
                found += [os.path.join(root, f) for f in files]
        return found

    def test_layout_is_huggingface_hubs(self):
        folder = model_folder("org/tiny", **self.opts)
        commit = self.tiny.refs["main"]
        repo_dir = os.path.join(self.cache, "models--org--tiny")
        self.assertEqual(folder, os.path.join(repo_dir, "snapshots", commit))
        with open(os.path.join(repo_dir, "refs", "main")) as f:
            self.assertEqual(f.read(), commit)
        blob_of = {"config.json": git_blob_id(CONFIG), "vocab.txt": git_blob_id(VOCAB),
                   "model.safetensors": hashlib.sha256(weights(1)).hexdigest()}
        for name, blob in blob_of.items():
            link = os.path.join(folder, name)
            self.assertEqual(os.readlink(link), "../../blobs/" + blob)
            with open(link, "rb") as f:
                self.assertEqual(f.read(), self.tiny.commits[commit][name])
        # files the repo lacks are remembered as huggingface_hub remembers them
        for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
            self.assertTrue(os.path.exists(os.path.join(repo_dir, ".no_exist", commit, name)))
        self.assertTrue(os.path.isdir(os.path.join(self.cache, ".locks", "models--org--tiny")))
        # hf_hub_download of a single file gives the same link
        self.assertEqual(hub_download("org/tiny", "vocab.txt", **self.opts),
                         os.path.join(folder, "vocab.txt"))

    def test_a_new_commit_is_seen_and_unchanged_blobs_kept(self):
        first = model_folder("org/tiny", **self.opts)
        config = CONFIG.replace(b"}", b', "vocab_size": 6}')
        commit = self.tiny.push({"config.json": config, "model.safetensors": weights(1),
                                 "vocab.txt": VOCAB})
        second = model_folder("org/tiny", **self.opts)
        self.assertEqual(os.path.basename(second), commit)
        self.assertNotEqual(first, second)
        with open(os.path.join(second, "config.json"), "rb") as f:
            self.assertEqual(f.read(), config)
        with open(os.path.join(self.cache, "models--org--tiny", "refs", "main")) as f:
            self.assertEqual(f.read(), commit)
        sha = hashlib.sha256(weights(1)).hexdigest()
        self.assertEqual(len(self.server.requests("GET", "/store/" + sha)), 1)
        self.assertEqual(model_folder("org/tiny", revision=os.path.basename(first),
                                      **self.opts), first)  # the old commit, by its hash

    def test_hf_endpoint_as_users_write_it(self):
        # a trailing slash (mirrors' instructions often have one) is no "//"
        opts = {k: v for k, v in self.opts.items() if k != "endpoint"}
        os.environ["HF_ENDPOINT"] = self.server.endpoint + "/"
        try:
            model_folder("org/tiny", **opts)
            self.assertTrue(all("//" not in r[1] for r in self.server.log), self.server.log)
            os.environ["HF_ENDPOINT"] = "ftp://mirror"
            self.assert_error(Status.ERR_INVALID_ARG, "HF_ENDPOINT", model_folder, "org/tiny",
                              **opts)
        finally:
            del os.environ["HF_ENDPOINT"]

    def test_offline_reads_the_cache_without_the_network(self):
        folder = model_folder("org/tiny", **self.opts)
        before = len(self.server.log)
        self.assertEqual(model_folder("org/tiny", local_files_only=True, **self.opts), folder)
        os.environ["HF_HUB_OFFLINE"] = "1"
        try:
            self.assertEqual(model_folder("org/tiny", **self.opts), folder)
        finally:
            del os.environ["HF_HUB_OFFLINE"]
        self.assertEqual(len(self.server.log), before, "offline look-ups reached the server")
        msg = self.assert_error(Status.ERR_NOT_FOUND, "offline mode", model_folder, "org/other",
                                local_files_only=True, **self.opts)
        self.assertIn(self.cache, msg)

    def test_unreachable_hub_falls_back_to_the_cache(self):
        folder = model_folder("org/tiny", **self.opts)
        self.server.close()
        self.assertEqual(model_folder("org/tiny", timeout=2, **self.opts), folder)
        self.assert_error(Status.ERR_NOT_FOUND, "could not be reached", model_folder,
                          "org/never-cached", timeout=2, **self.opts)
        self.server = HubServer()  # tearDown closes one

    def test_interrupted_download_resumes(self):
        sha = hashlib.sha256(weights(1)).hexdigest()
        self.server.drop_once.add(sha)
        partial = os.path.join(self.cache, "models--org--tiny", "blobs", sha + ".incomplete")
        self.assert_error(Status.ERR_IO, "run again to resume", model_folder, "org/tiny",
                          **self.opts)
        self.assertEqual(os.path.getsize(partial), len(weights(1)) // 2)
        folder = model_folder("org/tiny", **self.opts)
        self.assertFalse(os.path.exists(partial))
        with open(os.path.join(folder, "model.safetensors"), "rb") as f:
            self.assertEqual(f.read(), weights(1))
        ranges = [r[2].get("Range") for r in self.server.requests("GET", "/store/" + sha)]
        self.assertEqual(ranges, [None, "bytes=%d-" % (len(weights(1)) // 2)])

    def test_server_that_ignores_range_sends_the_file_again(self):
        sha = hashlib.sha256(weights(1)).hexdigest()
        self.server.drop_once.add(sha)
        self.server.ignore_range.add(sha)
        self.assert_error(Status.ERR_IO, "run again to resume", model_folder, "org/tiny",
                          **self.opts)
        folder = model_folder("org/tiny", **self.opts)  # not stuck on the partial file
        with open(os.path.join(folder, "model.safetensors"), "rb") as f:
            self.assertEqual(f.read(), weights(1))
        ranges = [r[2].get("Range") for r in self.server.requests("GET", "/store/" + sha)]
        self.assertEqual(ranges, [None, "bytes=%d-" % (len(weights(1)) // 2), None])

    def test_stalled_or_trickling_download_times_out(self):
        # huggingface_hub gives up a download after HF_HUB_DOWNLOAD_TIMEOUT
        # seconds without progress; a trickle of a few bytes a second is no
        # progress either. The part received stays .incomplete, never a blob.
        sha = hashlib.sha256(weights(1)).hexdigest()
        blobs = os.path.join(self.cache, "models--org--tiny", "blobs")
        for mode in ("trickle", "stall"):
            self.server.slow[sha] = mode
            start = time.monotonic()
            with environ(HF_HUB_DOWNLOAD_TIMEOUT="1"):
                msg = self.assert_error(Status.ERR_IO, "org/tiny/model.safetensors",
                                        model_folder, "org/tiny", **self.opts)
            took = time.monotonic() - start
            self.assertLess(took, SLOW_FOR / 2, mode + ": not bounded by the timeout")
            self.assertIn("timed out", msg)
            self.assertIn("HF_HUB_DOWNLOAD_TIMEOUT", msg)
            self.assertIn("run again to resume", msg)
            self.assertNotIn(sha, os.listdir(blobs))
            self.assertIn(sha + ".incomplete", os.listdir(blobs))
            snapshot = os.path.join(self.cache, "models--org--tiny", "snapshots",
                                    self.tiny.refs["main"])
            self.assertFalse(os.path.exists(os.path.join(snapshot, "model.safetensors")))
        del self.server.slow[sha]
        folder = model_folder("org/tiny", **self.opts)  # resumed from what was kept
        with open(os.path.join(folder, "model.safetensors"), "rb") as f:
            self.assertEqual(f.read(), weights(1))
        self.assertIsNotNone(self.server.requests("GET", "/store/" + sha)[-1][2].get("Range"))

    def test_metadata_request_is_bounded_by_the_etag_timeout(self):
        # the HEAD that asks for a file's commit and ETag is held to
        # HF_HUB_ETAG_TIMEOUT, as huggingface_hub's get_hf_file_metadata is
        folder = model_folder("org/tiny", **self.opts)
        self.server.hold.add("config.json")
        with environ(HF_HUB_ETAG_TIMEOUT="1"):
            start = time.monotonic()
            self.assertEqual(model_folder("org/tiny", **self.opts), folder)  # the cache
            self.assertLess(time.monotonic() - start, 6)
            self.server.add(Repo("org/uncached", {"config.json": CONFIG}))
            start = time.monotonic()
            msg = self.assert_error(Status.ERR_NOT_FOUND, "could not be reached", model_folder,
                                    "org/uncached", **self.opts)
            self.assertLess(time.monotonic() - start, 6)
        self.assertIn("HF_HUB_ETAG_TIMEOUT", msg)

    def test_timeouts_from_the_environment_are_checked(self):
        for name in ("HF_HUB_DOWNLOAD_TIMEOUT", "HF_HUB_ETAG_TIMEOUT"):
            for value, why in (("soon", "not a whole number"), ("2.5", "not a whole number"),
                               ("-5", "negative"), ("100000", "over 86400")):
                with environ(**{name: value}):
                    msg = self.assert_error(Status.ERR_INVALID_ARG, name + "='" + value + "'",
                                            model_folder, "org/tiny", **self.opts)
                self.assertIn(why, msg)
            with environ(**{name: "0"}):  # huggingface_hub's "int(value) or 10"
                model_folder("org/tiny", **self.opts)
        self.assert_error(Status.ERR_INVALID_ARG, "timeout='0'", model_folder, "org/tiny",
                          timeout=0, **self.opts)

    def test_error_pages_are_not_read_to_the_end(self):
        sha = hashlib.sha256(weights(1)).hexdigest()
        # the server's words, as huggingface_hub shows them, from a JSON page...
        self.server.store_error[sha] = ErrorPage(503, json.dumps(
            {"error": "the store is being repaired"}).encode())
        msg = self.assert_error(Status.ERR_IO, "HTTP 503", model_folder, "org/tiny",
                                **self.opts)
        self.assertIn("the store is being repaired", msg)
        # ... or a text one of 256 MiB, of which little is read
        self.server.store_error[sha] = ErrorPage(500, b"out of disk\n" + b"x" * 4000,
                                                 size=256 << 20)
        msg = self.assert_error(Status.ERR_IO, "HTTP 500: out of disk", model_folder,
                                "org/tiny", **self.opts)
        self.assertLess(sent_of(self.server, sha, 2)[1], 32 << 20)
        # a redirect's body, which libcurl would read to its end before following
        self.server.sent.clear()
        self.server.store_error[sha] = ErrorPage(
            302, b"<a>moved</a>", size=256 << 20,
            headers=[("Location", "%s/%s?moved" % (self.server.store, sha))])
        self.assert_error(Status.ERR_IO, "HTTP 302", model_folder, "org/tiny", **self.opts)
        self.assertLess(sent_of(self.server, sha)[0], 32 << 20)
        blobs = os.path.join(self.cache, "models--org--tiny", "blobs")
        self.assertNotIn(sha, os.listdir(blobs))
        del self.server.store_error[sha]
        folder = model_folder("org/tiny", **self.opts)
        with open(os.path.join(folder, "model.safetensors"), "rb") as f:
            self.assertEqual(f.read(), weights(1))

    def test_redirects_lead_to_http_only(self):
        cases = {"file": ("file:///etc/passwd", "not an http(s) URL"),
                 "gopher": ("gopher://127.0.0.1:6379/_INFO", "not an http(s) URL"),
                 "long": ("http://localhost/" + "a" * 5000, "Location over")}
        for name, (location, text) in cases.items():
            repo = "evil/redirect-" + name
            self.server.add(Repo(repo, {"config.json": CONFIG, "model.safetensors": weights(6)},
                                 head_override={"model.safetensors": {"location": location}}))
            self.assert_error(Status.ERR_IO, text, model_folder, repo, **self.opts)
            blobs = os.path.join(self.cache, "models--evil--redirect-" + name, "blobs")
            self.assertEqual(os.listdir(blobs), [git_blob_id(CONFIG)])  # config.json's alone

    def test_token_from_the_environment_is_cleaned_or_refused(self):
        self.server.add(Repo("org/private", {"config.json": CONFIG,
                                             "model.safetensors": weights(2)}, token="s3cret"))
        opts = {k: v for k, v in self.opts.items() if k != "token"}
        saved = os.environ.get("HF_TOKEN")
        try:
            os.environ["HF_TOKEN"] = " s3cret\r\n"  # as a mounted secret file often ends
            model_folder("org/private", **opts)
            sent = {r[2].get("Authorization") for r in self.server.log if "/resolve/" in r[1]}
            self.assertEqual(sent, {"Bearer s3cret"})
            os.environ["HF_TOKEN"] = "s3c\x01ret"
            self.assert_error(Status.ERR_INVALID_ARG, "control character", model_folder,
                              "org/private", **opts)
            self.assert_error(Status.ERR_INVALID_ARG, "control character", model_folder,
                              "org/private", **dict(self.opts, token="a\r\nX-Evil: 1"))
        finally:
            if saved is None:
                os.environ.pop("HF_TOKEN", None)
            else:
                os.environ["HF_TOKEN"] = saved

    def test_errors_say_what_to_do(self):
        msg = self.assert_error(Status.ERR_ACCESS, "HTTP 401", model_folder, "org/missing",
                                **self.opts)
        self.assertIn("HF_TOKEN", msg)
        self.server.add(Repo("org/private", {"config.json": CONFIG, "model.safetensors": b"x"},
                             token="s3cret"))
        self.assert_error(Status.ERR_ACCESS, "private", model_folder, "org/private", **self.opts)
        model_folder("org/private", **dict(self.opts, token="s3cret"))
        self.server.add(Repo("org/gated", {"config.json": CONFIG, "model.safetensors": b"x"},
                             gated_token="granted"))
        self.assert_error(Status.ERR_ACCESS, "HTTP 401", model_folder, "org/gated", **self.opts)
        msg = self.assert_error(Status.ERR_ACCESS, "gated", model_folder, "org/gated",
                                **dict(self.opts, token="other"))
        self.assertIn(self.server.endpoint + "/org/gated", msg)
        model_folder("org/gated", **dict(self.opts, token="granted"))
        self.assert_error(Status.ERR_NOT_FOUND, "no revision 'v9'", model_folder, "org/tiny",
                          revision="v9", **self.opts)
        self.assert_error(Status.ERR_NOT_FOUND, "has no file 'nope.txt'", hub_download,
                          "org/tiny", "nope.txt", **self.opts)
        self.server.add(Repo("org/not-a-model", {"README.md": b"hi"}))
        self.assert_error(Status.ERR_NOT_FOUND, "not a Transformers model repository",
                          model_folder, "org/not-a-model", **self.opts)
        self.server.add(Repo("org/no-weights", {"config.json": CONFIG}))
        self.assert_error(Status.ERR_NOT_FOUND, "pytorch_model.bin.index.json", model_folder,
                          "org/no-weights", **self.opts)
        self.assert_error(Status.ERR_NOT_FOUND, "not a Hub model id", model_folder,
                          "../not/an/id", **self.opts)
        self.assert_error(Status.ERR_INVALID_ARG, "revision", model_folder, "org/tiny",
                          revision="../../x", **self.opts)
        with self.assertRaises(TypeError):
            model_folder("org/tiny", revison="main", **self.opts)

    def test_token_goes_to_the_endpoint_only(self):
        self.server.add(Repo("org/private", {"config.json": CONFIG,
                                             "model.safetensors": weights(2)}, token="s3cret"))
        model_folder("org/private", **dict(self.opts, token="s3cret"))
        to_hub = [r for r in self.server.log if "/resolve/" in r[1]]
        to_store = self.server.requests(contains="/store/")
        self.assertTrue(to_hub and all(r[2].get("Authorization") == "Bearer s3cret"
                                       for r in to_hub))
        self.assertTrue(to_store and not any("Authorization" in r[2] for r in to_store))

    def test_shards_and_pytorch_model_bin(self):
        index = b'{"metadata": {}, "weight_map": {"a": "model-1.safetensors", ' \
                b'"b": "model-2.safetensors", "c": "model-1.safetensors"}}'
        self.server.add(Repo("org/sharded", {"config.json": CONFIG,
                                             "model.safetensors.index.json": index,
                                             "model-1.safetensors": weights(3),
                                             "model-2.safetensors": weights(4)}))
        folder = model_folder("org/sharded", **self.opts)
        for name in ("model-1.safetensors", "model-2.safetensors"):
            self.assertTrue(os.path.isfile(os.path.join(folder, name)))
        self.server.add(Repo("org/old", {"config.json": CONFIG, "pytorch_model.bin": weights(5)}))
        folder = model_folder("org/old", **self.opts)
        self.assertTrue(os.path.isfile(os.path.join(folder, "pytorch_model.bin")))
        self.assertFalse(os.path.exists(os.path.join(folder, "model.safetensors")))

    def test_renamed_repo_is_followed(self):
        self.server.renamed[("model", "tiny-old")] = "org/tiny"
        folder = model_folder("tiny-old", **self.opts)
        self.assertIn("models--tiny-old", folder)
        with open(os.path.join(folder, "config.json"), "rb") as f:
            self.assertEqual(f.read(), CONFIG)

    def test_hostile_answers_stay_inside_the_cache(self):
        cases = {
            "etag": ({"etag": "../../../../escape"}, Status.ERR_FORMAT, "ETag"),
            "commit": ({"commit": "../../../x"}, Status.ERR_FORMAT, "X-Repo-Commit"),
            "size": ({"size": 1000}, Status.ERR_FORMAT, "more than announced"),
            "sha": ({"etag": "ab" * 32}, Status.ERR_FORMAT, "sha256"),
        }
        for name, (override, status, text) in cases.items():
            repo = "evil/" + name
            self.server.add(Repo(repo, {"config.json": CONFIG, "model.safetensors": weights(6)},
                                 head_override={"model.safetensors": override}))
            self.assert_error(status, text, model_folder, repo, **self.opts)
            blobs = os.path.join(self.cache, "models--evil--" + name, "blobs")
            left = os.listdir(blobs) if os.path.isdir(blobs) else []
            self.assertNotIn("ab" * 32, left)
        index = b'{"weight_map": {"a": "../../../../../escape.safetensors"}}'
        self.server.add(Repo("evil/index", {"config.json": CONFIG,
                                            "model.safetensors.index.json": index}))
        self.assert_error(Status.ERR_INVALID_ARG, "not a file name", model_folder, "evil/index",
                          **self.opts)
        huge = b'{"weight_map": {' + b", ".join(b'"t%d": "s.safetensors"' % i
                                                 for i in range(400000)) + b"}}"
        self.server.add(Repo("evil/huge-index", {"config.json": CONFIG,
                                                 "model.safetensors.index.json": huge}))
        self.assert_error(Status.ERR_FORMAT, "model.safetensors.index.json", model_folder,
                          "evil/huge-index", **self.opts)
        self.assertEqual(self.files_outside_cache(), [])

    def test_one_download_per_machine(self):
        big = bytes(range(256)) * 40000
        self.server.add(Repo("org/big", {"config.json": CONFIG, "model.safetensors": big}))
        code = ("import sys; from cputrain import model_folder; "
                "print(model_folder('org/big', endpoint=sys.argv[1], cache_dir=sys.argv[2], "
                "token=''))")
        procs = [subprocess.Popen([sys.executable, "-c", code, self.server.endpoint, self.cache],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for _ in range(3)]
        outs = [p.communicate(timeout=120) for p in procs]
        for p, (out, err) in zip(procs, outs):
            self.assertEqual(p.returncode, 0, err.decode())
        self.assertEqual(len({o for o, _ in outs}), 1)
        sha = hashlib.sha256(big).hexdigest()
        self.assertEqual(len(self.server.requests("GET", "/store/" + sha)), 1)


def corpus_file(kind, name):
    with open(os.path.join(CORPUS, kind, name), "rb") as f:
        return f.read()


def rows(table):
    return [table[i] for i in range(len(table))]


class DatasetTest(unittest.TestCase):
    def setUp(self):
        self.saved = {k: os.environ.pop(k, None) for k in ("HF_HUB_OFFLINE", "HF_DATASETS_CACHE")}
        self.server = HubServer()
        self.tmp = tempfile.mkdtemp(prefix="cputrain-hub-data-")
        os.environ["HF_DATASETS_CACHE"] = os.path.join(self.tmp, "datasets")
        self.opts = {"endpoint": self.server.endpoint, "cache_dir": os.path.join(self.tmp, "hub"),
                     "token": ""}
        self.mrpc = corpus_file("parquet", "glue_mrpc.uncompressed.parquet")
        self.conll = corpus_file("parquet", "conll2003.zstd.parquet")

    def tearDown(self):
        for k, v in self.saved.items():
            os.environ.pop(k, None)
            if v is not None:
                os.environ[k] = v
        self.server.close()
        shutil.rmtree(self.tmp)

    def load(self, name, config, split, **kw):
        return Table.load_dataset(name, config, split, **dict(self.opts, **kw))

    def test_configurations_splits_and_shards(self):
        self.server.add(Repo("nyu-mll/glue", {
            "mrpc/train-00000-of-00002.parquet": self.mrpc,
            "mrpc/train-00001-of-00002.parquet": self.conll[:0] + self.mrpc,
            "mrpc/validation-00000-of-00001.parquet": self.mrpc,
            "mnli/validation_matched-00000-of-00001.parquet": self.mrpc,
            "cola/train-00000-of-00001.parquet": self.mrpc, "README.md": b"x"},
            repo_type="dataset"))
        with self.assertRaises(CputrainError) as cm:
            self.load("nyu-mll/glue", None, "train")
        self.assertEqual(cm.exception.status, Status.ERR_NOT_FOUND)
        self.assertIn("several configurations (cola, mnli, mrpc)", cm.exception.message)
        one = rows(Table(os.path.join(CORPUS, "parquet", "glue_mrpc.uncompressed.parquet")))
        train = self.load("nyu-mll/glue", "mrpc", "train")
        self.assertEqual(rows(train), one + one)  # two shards, in name order
        self.assertEqual(rows(self.load("nyu-mll/glue", "mrpc", "validation")), one)
        with self.assertRaises(CputrainError) as cm:  # validation is not validation_matched
            self.load("nyu-mll/glue", "mnli", "validation")
        self.assertIn("no Parquet file of split 'validation'", cm.exception.message)
        self.assertEqual(len(self.load("nyu-mll/glue", "mnli", "validation_matched")), len(one))
        snapshot = os.path.join(self.opts["cache_dir"], "datasets--nyu-mll--glue", "snapshots")
        self.assertTrue(os.path.isdir(snapshot))
        self.assertFalse(any(f.startswith("cola") for f in os.listdir(
            os.path.join(snapshot, os.listdir(snapshot)[0]))), "a file not asked for was fetched")

    def test_script_dataset_reads_the_parquet_export(self):
        repo = self.server.add(Repo("eriktks/conll2003", {"conll2003.py": b"# a script"},
                                    repo_type="dataset"))
        repo.push({"conll2003/train/0000.parquet": self.conll}, branch="refs/convert/parquet")
        expect = rows(Table(os.path.join(CORPUS, "parquet", "conll2003.zstd.parquet")))
        self.assertEqual(rows(self.load("eriktks/conll2003", None, "train")), expect)
        before = len(self.server.log)
        self.assertEqual(rows(self.load("eriktks/conll2003", None, "train",
                                        local_files_only=True)), expect)
        self.assertEqual(len(self.server.log), before)

    def test_datasets_cache_comes_first(self):
        # datasets' own cache: <org>___<name>/<config>/<version>/<hash>/<builder>-<split>.arrow;
        # the newest <hash> folder wins, and the Hub is never asked
        base = os.path.join(os.environ["HF_DATASETS_CACHE"], "rajpurkar___squad", "plain_text",
                            "0.0.0")
        for folder, source, when in (("old", "stsb.arrow", 1000), ("new", "squad.arrow", 2000)):
            os.makedirs(os.path.join(base, folder))
            shutil.copy(os.path.join(CORPUS, "arrow", source),
                        os.path.join(base, folder, "squad-train.arrow"))
            os.utime(os.path.join(base, folder), (when, when))
        expect = rows(Table(os.path.join(CORPUS, "arrow", "squad.arrow")))
        self.assertEqual(rows(self.load("rajpurkar/squad", None, "train")), expect)
        shutil.copy(os.path.join(base, "new", "squad-train.arrow"),
                    os.path.join(base, "new", "squad-validation-00001-of-00002.arrow"))
        shutil.copy(os.path.join(CORPUS, "arrow", "stsb.arrow"),
                    os.path.join(base, "new", "squad-validation-00000-of-00002.arrow"))
        os.utime(os.path.join(base, "new"), (2000, 2000))
        validation = self.load("rajpurkar/squad", "plain_text", "validation")
        stsb = rows(Table(os.path.join(CORPUS, "arrow", "stsb.arrow")))
        self.assertEqual(len(validation), len(stsb) + len(expect))
        self.assertEqual(rows(validation)[len(stsb)]["id"], expect[0]["id"])  # shard order
        self.assertEqual(self.server.log, [])

    def test_listing_error_page_is_not_read_to_the_end(self):
        # a 404 of the API with the Hub's headers and a page of 256 MiB: the
        # headers say what is wrong, and little of the page is read
        key = ("dataset", "org/gone")
        self.server.api_error[key] = ErrorPage(
            404, b"Repository not found\n", size=256 << 20,
            headers=[("X-Error-Code", "RepoNotFound")])
        with self.assertRaises(CputrainError) as cm:
            self.load("org/gone", None, "train")
        self.assertEqual(cm.exception.status, Status.ERR_NOT_FOUND, cm.exception.message)
        self.assertIn("datasets/org/gone: no such repository", cm.exception.message)
        self.assertTrue(all(n < 32 << 20 for n in sent_of(self.server, key)))

    def test_listing_of_too_many_values_is_refused(self):
        # 3 MiB of "[1, 1, ...]" in the Hub's answer, which the parser would
        # turn into a 44 MiB tree: a listing is held to 2**20 values
        self.server.add(Repo("org/padded", {"train.parquet": self.mrpc}, repo_type="dataset"))
        self.server.api_extra[("dataset", "org/padded")] = {"spaces": [1] * 1100000}
        with self.assertRaises(CputrainError) as cm:
            self.load("org/padded", None, "train")
        self.assertEqual(cm.exception.status, Status.ERR_FORMAT, cm.exception.message)
        self.assertIn("more than 1048576 values", cm.exception.message)
        del self.server.api_extra[("dataset", "org/padded")]
        self.assertEqual(len(self.load("org/padded", None, "train")),
                         len(rows(Table(os.path.join(CORPUS, "parquet",
                                                     "glue_mrpc.uncompressed.parquet")))))

    def test_bad_names_are_refused(self):
        for name, config, split in (("../x", None, "train"), ("org/x", "../c", "train"),
                                    ("org/x", None, "tr/ain")):
            with self.assertRaises(CputrainError) as cm:
                self.load(name, config, split)
            self.assertEqual(cm.exception.status, Status.ERR_INVALID_ARG)


if __name__ == "__main__":
    unittest.main()
