"""Placement and Model.set_placement, the binding itself: plans of a
synthetic machine, errors that name the problem, the handle's lifetime, and
a placement applied on this machine (threads read back as planned, the loss
unchanged). The plans' rules are tested in tests/check_topology.c."""

import os
import unittest
from unittest import mock

from cputrain import CputrainError, Model, Placement, Status

TWO_SOCKET = "package:2 numa:1 core:4 pu:2"

IDS = [[2, 17, 33, 5, 9, 3], [2, 41, 8, 3, 0, 0]]
MASK = [[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]]


def no_omp():
    """Plans with threads=0 follow OMP_NUM_THREADS: run without it."""
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    return mock.patch.dict(os.environ, env, clear=True)


class PlanTest(unittest.TestCase):

    def test_two_sockets_two_ranks(self):
        with no_omp():
            ranks = [Placement(r, 2, topology=TWO_SOCKET) for r in range(2)]
        self.assertEqual([p.threads for p in ranks], [4, 4])
        self.assertEqual([p.numa_node for p in ranks], [0, 1])
        self.assertEqual(ranks[0].thread_cpus(0), [0, 1])
        self.assertEqual(ranks[1].thread_cpus(3), [14, 15])
        cpus = [c for p in ranks for t in range(p.threads) for c in p.thread_cpus(t)]
        self.assertEqual(sorted(cpus), list(range(16)))
        self.assertTrue(ranks[1].describe().startswith("rank 1 -> node 1 -> cores 4-7"))
        self.assertIn("rank 1", str(ranks[1]))
        self.assertIn("rank 0", repr(ranks[0]))
        for p in ranks:
            p.close()

    def test_threads_asked(self):
        with Placement(0, 2, threads=2, topology=TWO_SOCKET) as p:
            self.assertEqual(p.threads, 2)

    def test_thread_out_of_range(self):
        with Placement(0, 2, topology=TWO_SOCKET) as p:
            with self.assertRaises(IndexError):
                p.thread_cpus(p.threads)
            with self.assertRaises(IndexError):
                p.thread_cpus(-1)
            with self.assertRaises(TypeError):
                p.thread_cpus("0")

    def test_errors(self):
        with self.assertRaises(CputrainError) as cm:
            Placement(topology="no such level:3")
        self.assertEqual(cm.exception.status, Status.ERR_INVALID_ARG)
        self.assertIn("no such level:3", cm.exception.message)
        with self.assertRaises(CputrainError) as cm:
            Placement(2, 2, topology=TWO_SOCKET)
        self.assertIn("local rank 2", cm.exception.message)
        with self.assertRaises(ValueError):
            Placement(0, 0)
        with self.assertRaises(ValueError):
            Placement(threads=-1)
        with self.assertRaises(TypeError):
            Placement(topology=3)

    def test_closed(self):
        p = Placement(topology=TWO_SOCKET)
        p.close()
        p.close()
        self.assertEqual(str(p), "<closed Placement>")
        with self.assertRaises(ValueError):
            p.threads

    def test_described_machine_cannot_be_applied(self):
        with Placement(topology=TWO_SOCKET) as p, \
                Model.create("bert-test", task="question-answering") as m:
            with self.assertRaises(CputrainError) as cm:
                m.set_placement(p)
            self.assertEqual(cm.exception.status, Status.ERR_UNSUPPORTED)
            with self.assertRaises(TypeError):
                m.set_placement("rank 0")


@unittest.skipUnless(hasattr(os, "sched_getaffinity"), "needs os.sched_getaffinity")
class AppliedTest(unittest.TestCase):

    def setUp(self):
        # set_placement binds this thread to one core: give it back, the
        # other tests of this process run here too.
        self.affinity = os.sched_getaffinity(0)
        self.addCleanup(os.sched_setaffinity, 0, self.affinity)

    def test_applied_on_this_machine(self):
        with no_omp():
            p = Placement()
        with p, Model.create("bert-test", task="question-answering", seed=3) as ref, \
                Model.create("bert-test", task="question-answering", seed=3) as m:
            ref.training = m.training = False
            ref.threads = p.threads
            want = ref.forward(IDS, attention_mask=MASK, start_positions=[1, 2],
                               end_positions=[3, 3])
            m.set_placement(p)
            self.assertEqual(m.threads, p.threads)
            text = p.describe()
            self.assertIn("\napplied: thread 0 PUs ", text)
            self.assertIn("(as planned)", text)
            self.assertNotIn("warning", text)
            self.assertEqual(os.sched_getaffinity(0), set(p.thread_cpus(0)))
            got = m.forward(IDS, attention_mask=MASK, start_positions=[1, 2],
                            end_positions=[3, 3])
            self.assertEqual(got, want)


if __name__ == "__main__":
    unittest.main()
