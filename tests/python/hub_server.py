"""A stand-in for the Hugging Face Hub on 127.0.0.1, for the tests: it
answers as the Hub does (huggingface_hub's file_download.py and the Hub's
API are what the client reads) and can misbehave on purpose.

  HEAD/GET /<id>/resolve/<rev>/<path>            (datasets: /datasets/<id>/...)
      small files: 200, ETag = the git blob id, X-Repo-Commit, Content-Length
      large files (LFS: .safetensors .bin .parquet .arrow): 302 to the file
      store (another host name: localhost), X-Linked-Etag = sha256,
      X-Linked-Size, X-Repo-Commit
      errors: 401 RepoNotFound (unknown or private, no token), 401/403
      GatedRepo, 404 RevisionNotFound / EntryNotFound (with X-Repo-Commit)
      a renamed repo: 307 to its new name, relative (as the Hub redirects)
  GET /store/<sha256>                            Range: bytes=N- gives 206
  GET /api/{models,datasets}/<id>/revision/<rev> {"sha", "siblings"}

Faults: drop_once (sha256s whose first download stops half-way: the
connection closes after half the announced bytes), slow (sha256 -> "stall":
half the bytes, then nothing; "trickle": half, then 4 bytes a second; for
SLOW_FOR seconds at most), hold (file names whose resolve answer never
comes), store_error and api_error (an error page of any size, its start
given; how much of it got out before the client hung up is in sent),
api_extra (more fields in a repo's API answer), and per-repo header
overrides (hostile ETags, commits, sizes). Every request is
logged."""

import hashlib
import http.server
import json
import threading
import time
import urllib.parse

LFS_SUFFIXES = (".safetensors", ".bin", ".parquet", ".arrow")
SLOW_FOR = 20  # seconds a slow answer goes on before the server gives up


def git_blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Repo:
    def __init__(self, repo_id, files, repo_type="model", token=None, gated_token=None,
                 branch="main", commit=None, head_override=None):
        self.id, self.type = repo_id, repo_type
        self.commits = {}
        self.refs = {}
        self.token = token              # private: only this token sees it
        self.gated_token = gated_token  # gated: only this token has access
        self.head_override = head_override or {}
        self.push(files, branch, commit)

    def push(self, files, branch="main", commit=None):
        commit = commit or hashlib.sha1(json.dumps(sorted(
            (k, hashlib.sha256(v).hexdigest()) for k, v in files.items())).encode()
            + self.id.encode() + str(len(self.commits)).encode()).hexdigest()
        self.commits[commit] = dict(files)
        self.refs[branch] = commit
        return commit


class ErrorPage:
    """An answer that is not the one asked for: status, headers, and a body
    of `size` bytes (`body` repeated)."""

    def __init__(self, status, body, size=None, headers=()):
        self.status, self.body, self.headers = status, body, list(headers)
        self.size = len(body) if size is None else size


class HubServer:
    def __init__(self):
        self.repos = {}      # (type, id) -> Repo
        self.renamed = {}    # (type, old id) -> new id
        self.drop_once = set()
        self.ignore_range = set()  # blobs served whole whatever the Range asks
        self.slow = {}       # sha256 -> "stall" | "trickle"
        self.hold = set()    # file names whose resolve answer never comes
        self.store_error = {}  # sha256 -> ErrorPage
        self.api_error = {}  # (type, id) -> ErrorPage
        self.api_extra = {}  # (type, id) -> more fields of its API answer
        self.sent = {}       # sha256 or (type, id) -> [bytes of an error page sent]
        self.closing = threading.Event()  # lets held answers go at close()
        self.log = []        # (method, path, {header: value})
        self.lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_HEAD(self):
                server.handle(self, head=True)

            def do_GET(self):
                server.handle(self, head=False)

        class Server(http.server.ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # a client hanging up on a hostile answer is expected here

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.endpoint = "http://127.0.0.1:%d" % self.port
        self.store = "http://localhost:%d/store" % self.port
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def add(self, repo):
        self.repos[(repo.type, repo.id)] = repo
        return repo

    def requests(self, method=None, contains=""):
        with self.lock:
            return [r for r in self.log if (method is None or r[0] == method) and contains in r[1]]

    # ---- answers ----
    def reply(self, h, status, headers=(), body=b"", head=False, length=None):
        h.send_response(status)
        for k, v in headers:
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body) if length is None else length))
        h.end_headers()
        if not head and body:
            h.wfile.write(body)

    def error_page(self, h, page, key):
        """page's status and headers, then its body repeated up to its size
        while the client reads; the bytes that got out go to sent[key]."""
        h.send_response(page.status)
        for k, v in page.headers:
            h.send_header(k, v)
        h.send_header("Content-Length", str(page.size))
        h.end_headers()
        sent, chunk = 0, (page.body * (1 + (1 << 16) // len(page.body)))[:1 << 16]
        try:
            while sent < page.size:
                part = chunk[:page.size - sent]
                h.wfile.write(part)
                sent += len(part)
        except OSError:
            h.close_connection = True
        with self.lock:
            self.sent.setdefault(key, []).append(sent)

    def slowly(self, h, status, headers, part, mode):
        """Headers and half the body at once, then a stall or a trickle."""
        h.send_response(status)
        for k, v in headers:
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(part)))
        h.end_headers()
        h.close_connection = True
        try:
            h.wfile.write(part[:len(part) // 2])
            deadline = time.monotonic() + SLOW_FOR
            for byte in part[len(part) // 2:]:
                if mode == "stall" or time.monotonic() > deadline:
                    self.closing.wait(max(0, deadline - time.monotonic()))
                    return
                if self.closing.wait(0.25):
                    return
                h.wfile.write(bytes([byte]))
        except OSError:
            pass

    def error(self, h, status, code, head, commit=None):
        headers = [("X-Error-Code", code), ("X-Error-Message", code + " (stand-in Hub)")]
        if commit:
            headers.append(("X-Repo-Commit", commit))
        self.reply(h, status, headers, json.dumps({"error": code}).encode(), head)

    def handle(self, h, head):
        url = urllib.parse.urlsplit(h.path)
        path = urllib.parse.unquote(url.path)
        with self.lock:
            self.log.append(("HEAD" if head else "GET", h.path,
                             {k: h.headers[k] for k in ("Authorization", "Range") if h.headers[k]}))
        if path.startswith("/store/"):
            return self.serve_store(h, path[len("/store/"):], head)
        repo_type, rest = "model", path[1:]
        if rest.startswith("api/"):
            return self.serve_api(h, rest[len("api/"):])
        if rest.startswith("datasets/"):
            repo_type, rest = "dataset", rest[len("datasets/"):]
        if "/resolve/" not in rest:
            return self.reply(h, 404, body=b"not found", head=head)
        repo_id = rest.split("/resolve/", 1)[0]
        # The revision is quoted whole ("refs%2Fconvert%2Fparquet"), the path part by part.
        rev, _, filename = url.path.split("/resolve/", 1)[1].partition("/")
        self.serve_file(h, repo_type, repo_id, urllib.parse.unquote(rev),
                        urllib.parse.unquote(filename), head, h.path)

    def access(self, h, repo_type, repo_id, head):
        """The repo, or None after answering as the Hub does for it."""
        auth = h.headers.get("Authorization", "")
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else None
        repo = self.repos.get((repo_type, repo_id))
        if repo is None or (repo.token and token != repo.token):
            self.error(h, 401 if token is None or repo is not None else 404, "RepoNotFound", head)
            return None
        if repo.gated_token and token != repo.gated_token:
            self.error(h, 401 if token is None else 403, "GatedRepo", head)
            return None
        return repo

    def renamed_to(self, h, repo_type, repo_id, old_path, head):
        new = self.renamed.get((repo_type, repo_id))
        if new is None:
            return False
        location = old_path.replace("/" + repo_id + "/", "/" + new + "/", 1)
        self.reply(h, 307, [("Location", location)], head=head)
        return True

    def serve_file(self, h, repo_type, repo_id, rev, filename, head, raw_path):
        if self.renamed_to(h, repo_type, repo_id, raw_path, head):
            return
        repo = self.access(h, repo_type, repo_id, head)
        if repo is None:
            return
        commit = rev if rev in repo.commits else repo.refs.get(rev)
        if commit is None:
            return self.error(h, 404, "RevisionNotFound", head)
        files = repo.commits[commit]
        if filename not in files:
            return self.error(h, 404, "EntryNotFound", head, commit)
        if filename in self.hold:  # accepted, then never answered
            self.closing.wait(SLOW_FOR)
            h.close_connection = True
            return
        data = files[filename]
        over = repo.head_override.get(filename, {})
        if filename.endswith(LFS_SUFFIXES):
            sha = hashlib.sha256(data).hexdigest()
            headers = [("X-Repo-Commit", over.get("commit", commit)),
                       ("X-Linked-Etag", '"%s"' % over.get("etag", sha)),
                       ("X-Linked-Size", str(over.get("size", len(data)))),
                       ("ETag", '"%s"' % git_blob_id(b"lfs pointer " + sha.encode())),
                       ("Location", over.get("location", "%s/%s" % (self.store, sha)))]
            return self.reply(h, 302, headers, head=head)
        headers = [("X-Repo-Commit", over.get("commit", commit)),
                   ("ETag", '"%s"' % over.get("etag", git_blob_id(data)))]
        self.reply(h, 200, headers, data, head)

    def find_blob(self, sha):
        for repo in self.repos.values():
            for files in repo.commits.values():
                for data in files.values():
                    if hashlib.sha256(data).hexdigest() == sha:
                        return data
        return None

    def serve_store(self, h, sha, head):
        page = self.store_error.get(sha)
        if page is not None and not head and not urllib.parse.urlsplit(h.path).query:
            return self.error_page(h, page, sha)
        data = self.find_blob(sha)
        if data is None:
            return self.reply(h, 404, body=b"no such blob", head=head)
        start = 0
        rng = h.headers.get("Range", "")
        if rng.startswith("bytes=") and rng.endswith("-") and sha not in self.ignore_range:
            start = int(rng[len("bytes="):-1])
        if start > len(data):
            return self.reply(h, 416, head=head)
        with self.lock:
            drop = sha in self.drop_once and not head
            self.drop_once.discard(sha)
        part = data[start:]
        headers = [("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))] \
            if start else []
        if self.slow.get(sha) and not head:
            return self.slowly(h, 206 if start else 200, headers, part, self.slow[sha])
        if drop:  # announce everything, send half, hang up
            self.reply(h, 206 if start else 200, headers, part[:len(part) // 2], head,
                       length=len(part))
            h.close_connection = True
            h.wfile.flush()
            h.connection.shutdown(2)
            return
        self.reply(h, 206 if start else 200, headers, part, head)

    def serve_api(self, h, rest):
        kind, _, rest = rest.partition("/")
        repo_type = {"models": "model", "datasets": "dataset"}.get(kind)
        if repo_type is None or "/revision/" not in rest:
            return self.reply(h, 404, body=b"not found")
        repo_id, rev = rest.split("/revision/", 1)
        if (repo_type, repo_id) in self.api_error:
            return self.error_page(h, self.api_error[(repo_type, repo_id)], (repo_type, repo_id))
        if self.renamed_to(h, repo_type, repo_id, h.path, False):
            return
        repo = self.access(h, repo_type, repo_id, False)
        if repo is None:
            return
        commit = rev if rev in repo.commits else repo.refs.get(rev)
        if commit is None:
            return self.error(h, 404, "RevisionNotFound", False)
        body = {"id": repo_id, "sha": commit,
                "siblings": [{"rfilename": name} for name in sorted(repo.commits[commit])]}
        body.update(self.api_extra.get((repo_type, repo_id), {}))
        self.reply(h, 200, [("Content-Type", "application/json")], json.dumps(body).encode())
