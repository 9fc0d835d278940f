"""Dist, the binding: options, a one-process job, and two forked ranks
joined through shared memory — allreduce of numpy arrays (f32 sum and mean,
bf16), broadcast, allgather, barrier — plus the errors the library names."""

import array
import os
import socket
import threading
import unittest

import cputrain
from cputrain import CputrainError, Dist, Rendezvous, Status

from helpers import needs_numpy, np


def in_ranks(world, body):
    """Runs body(rank) in `world` forked processes; returns their exit codes
    (0: body returned, 1: it raised, after printing why)."""
    pids = []
    for rank in range(world):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                body(rank)
                code = 0
            except BaseException as e:  # report, never return into unittest
                print("rank %d: %r" % (rank, e))
            os._exit(code)
        pids.append(pid)
    return [os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids]


class OneProcess(unittest.TestCase):
    def test_local_job(self):
        with Dist(backend="local") as d:
            self.assertEqual((d.rank, d.world_size, d.backend), (0, 1, "local"))
            buf = array.array("f", [1.5, -2.0])
            d.allreduce(buf, op="avg")
            self.assertEqual(list(buf), [1.5, -2.0])
            self.assertEqual(d.allgather(b"abc"), [b"abc"])
            d.barrier()
        self.assertRaisesRegex(ValueError, "closed", lambda: d.rank)

    def test_bad_options_are_named(self):
        with self.assertRaises(CputrainError) as cm:
            Dist(backend="carrier-pigeon")
        self.assertEqual(cm.exception.status, Status.ERR_INVALID_ARG)
        self.assertIn("carrier-pigeon", str(cm.exception))
        with self.assertRaises(CputrainError) as cm:
            Dist(colour="blue")
        self.assertIn("colour", str(cm.exception))
        with self.assertRaises(CputrainError) as cm:
            Dist(rank=1)
        self.assertIn("world_size", str(cm.exception))
        self.assertRaises(TypeError, Dist, timeout=True)

    def test_buffer_checks(self):
        with Dist(backend="local") as d:
            self.assertRaises(ValueError, d.allreduce, b"read-only")
            self.assertRaises(ValueError, d.allreduce, bytearray(3))  # not whole floats
            self.assertRaises(ValueError, d.allreduce, bytearray(4), op="max")
            with self.assertRaises(CputrainError) as cm:
                d.broadcast(bytearray(4), root=1)
            self.assertIn("root 1", str(cm.exception))


@needs_numpy
class TwoRanks(unittest.TestCase):
    def test_collectives_over_shm(self):
        job = "pytest-%d" % os.getpid()

        def body(rank):
            with Dist(backend="shm", rank=rank, world_size=2, job=job, timeout=20) as d:
                assert d.backend == "shm" and d.world_size == 2
                x = np.arange(1001, dtype=np.float32) * (rank + 1)
                d.allreduce(x)
                assert np.array_equal(x, np.arange(1001, dtype=np.float32) * 3), x[:4]
                y = np.full(7, rank + 1, dtype=np.float32)
                d.allreduce(y, op="avg")
                assert np.all(y == 1.5), y
                # bf16 bit patterns: 1.0 = 0x3f80, 2.0 = 0x4000; sum 3.0 = 0x4040
                z = np.full(5, 0x3f80 if rank == 0 else 0x4000, dtype=np.uint16)
                d.allreduce(z, dtype="bf16")
                assert np.all(z == 0x4040), z
                w = np.zeros(3, dtype=np.int64) if rank else np.array([7, 8, 9])
                d.broadcast(w, root=0)
                assert list(w) == [7, 8, 9], w
                assert d.allgather(bytes([rank, 42])) == [b"\x00*", b"\x01*"]
                d.barrier()

        self.assertEqual(in_ranks(2, body), [0, 0])


class RendezvousTest(unittest.TestCase):
    """Rendezvous: a peer with the job's secret is admitted and the socket
    carries bytes; one with another secret is refused (ERR_DIST), a port
    nobody listens on is not reached (ERR_IO)."""

    def test_admits_only_the_job(self):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        host = Rendezvous("job-a", secret="s3cret-of-the-job")
        self.assertTrue(host.has_secret)
        got = []

        def serve():
            sock, peer = host.accept(listener, timeout=20)
            got.append(peer)
            with sock:
                sock.sendall(b"hello")

        t = threading.Thread(target=serve)
        t.start()
        with Rendezvous("job-a", secret="s3cret-of-the-job") as peer:
            with peer.connect("127.0.0.1", port, timeout=20) as sock:
                self.assertEqual(sock.recv(5), b"hello")
        t.join()
        self.assertTrue(got[0].startswith("127.0.0.1:"), got)

        stranger = Rendezvous("job-a", secret="another-secret-entirely")
        t = threading.Thread(target=lambda: got.append(host.accept(listener, timeout=3)))
        t.start()
        with self.assertRaises(CputrainError) as cm:
            stranger.connect("127.0.0.1", port, timeout=3)
        self.assertEqual(cm.exception.status, Status.ERR_DIST)
        t.join()
        self.assertEqual(got[-1], (None, None))  # nobody admitted in time

        with self.assertRaises(CputrainError) as cm:
            Rendezvous("job-a", secret="x" * 16).connect("127.0.0.1", 1, timeout=0.5)
        self.assertEqual(cm.exception.status, Status.ERR_IO)
        listener.close()
        host.close()


if __name__ == "__main__":
    unittest.main()
