"""Plays a stranger, or a misbehaving member, at cputrain-run's rendezvous.

    rdzv_stranger.py garbage PORT      connects, sends the old line protocol's
                                       "JOIN 1 0" and "FAIL 1" and bytes, waits
                                       for the host to close the connection
    rdzv_stranger.py silent PORT       connects, says nothing, waits for the
                                       host to close the connection
    rdzv_stranger.py member PORT LINE  does the handshake as a launcher of the
                                       job (CPUTRAIN_DIST_SECRET, RDZV_ID),
                                       checks the host's proof, sends LINE (a
                                       malformed message), waits for the close

Prints "port N" (its own port, as the host logs it) once connected, then
"closed" when the host closed the connection, or "open" if it had not after
60 s; a member prints "admitted" when the host proved itself. The handshake
is lib/dist/tcp_auth.h's, written from its description (Python's hmac).
"""
import hashlib
import hmac
import os
import socket
import struct
import sys

MAGIC, VERSION, JOIN, CHAL, PROOF, VERDICT = 0x43545450, 2, 1, 16, 17, 18
SLOTS = 65536  # tools/cputrain-run.c RDZV_SLOTS


def recv_exact(s, n):
    out = b""
    while len(out) < n:
        got = s.recv(n - len(out))
        if not got:
            raise EOFError
        out += got
    return out


def wait_close(s):
    s.settimeout(60)
    try:
        while s.recv(4096):
            pass
        print("closed", flush=True)
    except socket.timeout:
        print("open", flush=True)
    except OSError:
        print("closed", flush=True)


def handshake(s):
    secret = os.environ["CPUTRAIN_DIST_SECRET"].encode()
    job = ("cputrain-run rendezvous v1 " + os.environ.get("RDZV_ID", "none")).encode()
    key = hmac.new(secret, b"cputrain dist secret v1", hashlib.sha256).digest()
    job_id = hashlib.sha256(b"cputrain tcp job " + job).digest()
    rank = int.from_bytes(os.urandom(2), "big") % SLOTS
    hello = struct.pack(">8I", MAGIC, VERSION, JOIN, 1, rank, SLOTS, 1, 0)
    hello += job_id + os.urandom(32) + b"python".ljust(64, b"\0")
    s.sendall(hello)
    chal = recv_exact(s, 16)
    if struct.unpack(">4I", chal)[2] != CHAL:
        raise SystemExit("refused: code %d" % struct.unpack(">4I", chal)[3])
    chal += recv_exact(s, 80)

    def mac(role):
        msg = b"cputrain tcp handshake v2\0" + role + b"\0"
        msg += struct.pack(">I", len(job)) + job + hello + chal
        return hmac.new(key, msg, hashlib.sha256).digest()

    s.sendall(struct.pack(">4I", MAGIC, VERSION, PROOF, 0) + mac(b"connector"))
    verdict = recv_exact(s, 48)
    if struct.unpack(">4I", verdict[:16])[3] != 0:
        raise SystemExit("refused: code %d" % struct.unpack(">4I", verdict[:16])[3])
    if not hmac.compare_digest(verdict[16:], mac(b"acceptor")):
        raise SystemExit("the host failed to prove itself")
    print("admitted", flush=True)


def main():
    mode, port = sys.argv[1], int(sys.argv[2])
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    print("port %d" % s.getsockname()[1], flush=True)
    if mode == "garbage":
        s.sendall(b"JOIN 1 0\nFAIL 1\n" + bytes(range(256)) * 4)
    elif mode == "member":
        handshake(s)
        s.sendall(sys.argv[3].encode() + b"\n")
    elif mode != "silent":
        raise SystemExit("unknown mode " + mode)
    wait_close(s)


main()
