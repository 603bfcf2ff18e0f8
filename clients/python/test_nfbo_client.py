"""Tests of nfbo_client against a real ``nfbo serve``.

cmd/nfbo's TestPythonClient starts the servers and runs this file with their addresses in the environment:
NFBO_URL, a fresh run of task "demo" with a first batch of 40 molecules and a budget of 50; NFBO_TOKEN_URL and
NFBO_TOKEN, a fresh run served with -token-file. Without them only the tests that need no server run. By hand::

    nfbo serve -run /tmp/r -task demo -init data/guacamol/guacamol_train_data_first_100.csv -init-count 40 \\
        -budget 50 -queries 5 -model data/models/small &
    NFBO_URL=http://127.0.0.1:8080 python3 clients/python/test_nfbo_client.py -v
"""

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import nfbo_client  # noqa: E402  (found next to this file, installed or not)
from nfbo_client import Client, Molecule, ServeError  # noqa: E402

URL = os.environ.get("NFBO_URL")
TOKEN_URL = os.environ.get("NFBO_TOKEN_URL")
TOKEN = os.environ.get("NFBO_TOKEN")


def length_score(smiles):
    """The protocol's example objective, as cmd/nfbo's tests compute it (lengthScore)."""
    return len(smiles) / 10


class LocalTest(unittest.TestCase):
    """Checks made before anything is sent, so a client of a port nobody listens on must never get to connect."""

    def setUp(self):
        self.client = Client("http://127.0.0.1:9/v1/")  # the discard port: refused on loopback

    def test_base_url(self):
        self.assertEqual(self.client.base_url, "http://127.0.0.1:9")
        self.assertEqual(Client().base_url, nfbo_client.DEFAULT_URL)

    def test_bad_rows_raise_before_sending(self):
        for scores, want in [
            ({"m1": float("nan")}, "id m1: score nan, not a finite number"),
            ([("m1", 0.5), ("m2", float("inf"))], "id m2: score inf, not a finite number"),
            ([("m3", -math.inf)], "id m3: score -inf"),
            ({"m4": None}, "id m4: no score"),
            ({"m5": "0.5"}, "id m5: score '0.5', not a number"),
            ({"m6": True}, "id m6: score True, not a number"),
            ([("m7", 1.0, "failed")], "id m7: both a score"),
            ([("m8", None, " ")], "id m8: an empty error"),
            ([("m9",)], "want (id, score) or (id, None, error)"),
            (["m10"], "want (id, score)"),
            ({}, "no scores"),
        ]:
            with self.subTest(scores=scores):
                with self.assertRaises(ValueError) as cm:
                    self.client.tell(scores)
                self.assertIn(want, str(cm.exception))

    def test_connection_refused_is_an_oserror(self):
        with self.assertRaises(OSError):
            self.client.status()

    def test_serve_error(self):
        e = ServeError(400, "request body:2: id x: not asked")
        self.assertEqual((e.status, e.message), (400, "request body:2: id x: not asked"))
        self.assertEqual(str(e), "nfbo serve: 400: request body:2: id x: not asked")


@unittest.skipUnless(URL, "NFBO_URL not set")
class ServeTest(unittest.TestCase):
    """One run from its first ask to its end. The steps share the server's run, so they are numbered: unittest
    runs them in name order, and each starts where the one before left off."""

    @classmethod
    def setUpClass(cls):
        cls.client = Client(URL, timeout=300)

    def test_01_ask(self):
        batch = self.client.ask()
        self.assertEqual((len(batch), batch.finished, batch.calls, batch.budget), (40, False, 0, 50))
        self.assertIsInstance(batch.molecules[0], Molecule)
        mol_id, smiles = batch.molecules[0]  # a Molecule is a tuple
        self.assertEqual((mol_id, smiles), (batch.molecules[0].id, batch.molecules[0].smiles))
        again = self.client.ask()
        self.assertEqual(again, batch, "asking again before telling must give the same batch")
        type(self).batch = batch

    def test_02_tell_dict(self):
        first = self.batch.molecules[:10]
        reply = self.client.tell({m.id: length_score(m.smiles) for m in first})
        self.assertEqual((reply.new, reply.repeated, reply.calls, reply.awaiting), (10, 0, 10, 30))

    def test_03_tell_pairs_twice(self):
        pairs = [(m.id, length_score(m.smiles)) for m in self.batch.molecules[10:20]]
        reply = self.client.tell(iter(pairs))  # any iterable, a generator included
        self.assertEqual((reply.new, reply.repeated, reply.calls, reply.awaiting), (10, 0, 20, 20))
        reply = self.client.tell(pairs)
        self.assertEqual((reply.new, reply.repeated, reply.calls, reply.awaiting), (0, 10, 20, 20),
                         "a score told twice must count once")

    def test_04_tell_error_row(self):
        m = self.batch.molecules[20]
        reply = self.client.tell([(m.id, None, "synthesis failed")])
        self.assertEqual((reply.new, reply.calls, reply.awaiting), (1, 21, 19))

    def test_05_bad_tells(self):
        m = self.batch.molecules[21]
        with self.assertRaises(ValueError) as cm:
            self.client.tell({m.id: float("nan")})
        self.assertIn("id %s:" % m.id, str(cm.exception))
        with self.assertRaises(ServeError) as cm:
            self.client.tell([(m.id, 1.0), ("m999", 0.5)])
        self.assertEqual(cm.exception.status, 400)
        self.assertIn("request body:2:", cm.exception.message)
        self.assertIn("m999", cm.exception.message)
        with self.assertRaises(ServeError) as cm:
            self.client.tell([(self.batch.molecules[0].id, 99.0)])
        self.assertEqual(cm.exception.status, 400, "a changed score must be refused")
        self.assertEqual(self.client.status().calls, 21, "a refused tell must apply nothing")

    def test_06_status(self):
        st = self.client.status()
        self.assertEqual((st.task, st.budget, st.calls, st.finished), ("demo", 50, 21, False))
        self.assertEqual(st.awaiting, self.batch.molecules[21:])
        self.assertEqual(len(st.best), 10)
        scores = [b.score for b in st.best]
        self.assertEqual(scores, sorted(scores, reverse=True))
        want = max(length_score(m.smiles) for m in self.batch.molecules[:20])
        self.assertEqual(st.best[0].score, want)
        self.assertEqual(length_score(st.best[0].smiles), want)

    def test_07_report(self):
        md = self.client.report()
        self.assertIn("demo", md)
        self.assertIn("|", md)
        page = self.client.report_html()
        self.assertIn("<svg", page)

    def test_08_loop(self):
        seen, batches = [], []

        def score(smiles):
            seen.append(smiles)
            if len(seen) == 1:
                raise RuntimeError("could not make it")
            return length_score(smiles)

        final = self.client.loop(score, on_batch=lambda b, r: batches.append((len(b), r.awaiting)))
        self.assertTrue(final.finished)
        self.assertEqual((final.calls, final.budget, final.awaiting), (50, 50, []))
        self.assertEqual(len(seen), 29, "the loop must score the rest of the first batch, then the budget's rest")
        self.assertEqual(batches[0], (19, 0))
        self.assertTrue(all(awaiting == 0 for _, awaiting in batches))
        after = self.client.ask()
        self.assertEqual((after.molecules, after.finished, after.calls), ([], True, 50))
        self.assertTrue(self.client.loop(score).finished)
        self.assertEqual(len(seen), 29, "a finished run must not be scored again")


class LoopAllFailTest(unittest.TestCase):
    """loop refuses to tell a batch whose every molecule failed, checked against a stand-in server."""

    def test_all_fail(self):
        class Stub(Client):
            told = []

            def ask(self):
                return nfbo_client.Batch([Molecule("m1", "CCO"), Molecule("m2", "CCN")], False, 0, 10)

            def tell(self, scores):
                self.told.append(list(scores))
                return nfbo_client.TellReply(len(self.told[-1]), 0, 2, 0)

            def status(self):
                return "status"

        stub = Stub()
        with self.assertRaises(ZeroDivisionError):
            stub.loop(lambda s: 1 / 0)
        self.assertEqual(stub.told, [], "a batch that all failed must not be told")
        self.assertEqual(stub.loop(lambda s: 1 / 0, max_batches=1, stop_if_all_fail=False), "status")
        self.assertEqual(stub.told, [[("m1", None, "ZeroDivisionError: division by zero"),
                                      ("m2", None, "ZeroDivisionError: division by zero")]])
        stub.told.clear()
        stub.loop(lambda s: float("nan") if s == "CCO" else 0.25, max_batches=2)
        self.assertEqual(len(stub.told), 2)
        self.assertEqual(stub.told[0][1], ("m2", 0.25))
        self.assertEqual(stub.told[0][0][:2], ("m1", None))
        self.assertIn("returned nan, not a finite number", stub.told[0][0][2])


@unittest.skipUnless(TOKEN_URL and TOKEN, "NFBO_TOKEN_URL or NFBO_TOKEN not set")
class TokenTest(unittest.TestCase):
    """A server started with -token-file: the right bearer token is served, a wrong or missing one is a 401."""

    def test_token(self):
        for token in [None, "wrong", TOKEN + "x"]:
            with self.subTest(token=token):
                with self.assertRaises(ServeError) as cm:
                    Client(TOKEN_URL, token=token).status()
                self.assertEqual(cm.exception.status, 401)
                self.assertIn("bearer token", cm.exception.message)
        client = Client(TOKEN_URL, token=TOKEN, timeout=300)
        batch = client.ask()
        self.assertGreater(len(batch), 0)
        reply = client.tell({m.id: length_score(m.smiles) for m in batch})
        self.assertEqual(reply.new, len(batch))
        self.assertEqual(client.status().calls, len(batch))


if __name__ == "__main__":
    unittest.main()
