#!/usr/bin/env python3
"""Soak test of ask/tell over HTTP: N clients against one `nfbo serve`, killed with SIGKILL and restarted.

Every client loops: ask, then tell a random part of what it was given (sometimes twice, sometimes with a bad row
that must be refused whole), until the server says the run is finished. Meanwhile the server is killed with
SIGKILL every few seconds and started again on the same run directory. At the end the run must hold exactly the
budget's calls, each paid once, each with the score its client told; the ledger must hold exactly the budget's
ids; status must say finished with nothing awaiting; and no good tell may have been refused.

    scripts/asktell-soak.py [-nfbo bin/nfbo] [-model data/models/small] [-clients 8] [-budget 100] [-kills 4] DIR

DIR is made (it must not exist). Standard library only; needs RDKit for /usr/bin/python3 as nfbo does.
"""
import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request


def score(smiles):
    """The lab's answer: deterministic, so that any logged score can be checked."""
    return len(smiles) / 10


class Server:
    def __init__(self, args, run):
        self.args, self.run, self.proc, self.url = args, run, None, None
        self.lock = threading.Lock()
        self.starts = 0

    def start(self):
        cmd = [self.args.nfbo, "serve", "-run", self.run, "-addr", "127.0.0.1:0"]
        if self.starts == 0:
            cmd += ["-task", "soak", "-init", self.args.init, "-init-count", str(self.args.init_count),
                    "-budget", str(self.args.budget), "-model", self.args.model, "-anchors", "2", "-queries", "5",
                    "-candidates", "200"]
        log = open(os.path.join(os.path.dirname(self.run), "serve-%d.log" % self.starts), "w")
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.PIPE, text=True)
        self.starts += 1
        for line in self.proc.stderr:
            log.write(line)
            m = re.search(r"on (http://[0-9.:]+)/v1/", line)
            if m:
                with self.lock:
                    self.url = m.group(1)
                threading.Thread(target=lambda: [log.write(l) for l in self.proc.stderr], daemon=True).start()
                return
        raise SystemExit("serve ended before listening: see %s" % log.name)

    def kill(self):
        with self.lock:
            self.url = None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def base(self):
        with self.lock:
            return self.url


def call(server, method, path, body=None):
    """Sends a request, retrying while the server is down; returns (status, decoded JSON)."""
    for _ in range(600):
        base = server.base()
        if base is None:
            time.sleep(0.1)
            continue
        req = urllib.request.Request(base + path, data=body.encode() if body is not None else None, method=method)
        try:
            with urllib.request.urlopen(req, timeout=600) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.1)  # killed under us: the tell may or may not have landed; telling again is safe
    raise SystemExit("the server never came back")


def client(k, server, args, handed, problems, mu):
    rng = random.Random(k)
    for _ in range(1000):
        status, rep = call(server, "POST", "/v1/ask")
        if status != 200:
            problems.append("client %d: ask %d %s" % (k, status, rep))
            return
        if rep["finished"]:
            return
        rows = []
        with mu:
            for m in rep["batch"]:
                if handed.setdefault(m["id"], m["smiles"]) != m["smiles"]:
                    problems.append("id %s handed out as %s and %s" % (m["id"], handed[m["id"]], m["smiles"]))
                if rng.random() < 0.4:
                    rows.append("%s,%r" % (m["id"], score(m["smiles"])))
        if not rows:
            continue
        if rng.random() < 0.1:  # a bad row: refused whole, nothing applied
            status, rep = call(server, "POST", "/v1/tell", "id,score\n" + "\n".join(rows) + "\nm999999,1\n")
            if status != 400:
                problems.append("client %d: a tell with an unknown id got %d %s" % (k, status, rep))
        for _ in range(2 if rng.random() < 0.2 else 1):  # sometimes sent twice
            status, rep = call(server, "POST", "/v1/tell", "id,score\n" + "\n".join(rows) + "\n")
            if status != 200:
                problems.append("client %d: tell %d %s" % (k, status, rep))
    problems.append("client %d: the run did not finish" % k)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-nfbo", default="bin/nfbo")
    p.add_argument("-model", default="data/models/small")
    p.add_argument("-init", default="data/guacamol/guacamol_train_data_first_100.csv")
    p.add_argument("-init-count", type=int, default=18)
    p.add_argument("-clients", type=int, default=8)
    p.add_argument("-budget", type=int, default=100)
    p.add_argument("-kills", type=int, default=4)
    p.add_argument("-every", type=float, default=8, help="seconds between kills")
    p.add_argument("dir")
    args = p.parse_args()
    os.makedirs(args.dir)
    run = os.path.join(args.dir, "run")
    server = Server(args, run)
    server.start()
    handed, problems, mu = {}, [], threading.Lock()
    threads = [threading.Thread(target=client, args=(k, server, args, handed, problems, mu)) for k in range(args.clients)]
    for t in threads:
        t.start()
    for _ in range(args.kills):
        time.sleep(args.every)
        if not any(t.is_alive() for t in threads):
            break
        server.kill()
        server.start()
    for t in threads:
        t.join()
    _, st = call(server, "GET", "/v1/status")
    server.kill()

    calls = [json.loads(l) for l in open(os.path.join(run, "evaluations.jsonl"))]
    ledger = [json.loads(l) for l in open(os.path.join(run, "asked.jsonl"))]
    seen = set()
    for rec in calls:
        key = rec.get("canonical") or rec.get("smiles")
        if key in seen:
            problems.append("%s paid twice" % key)
        seen.add(key)
        if rec.get("score") != score(key):
            problems.append("call %s: %s scored %s, told %s" % (rec.get("call"), key, rec.get("score"), score(key)))
    if len(calls) != args.budget:
        problems.append("%d calls in the log, budget %d" % (len(calls), args.budget))
    if len(ledger) != args.budget or len(handed) != args.budget:
        problems.append("%d ids in the ledger, %d handed out, budget %d" % (len(ledger), len(handed), args.budget))
    if not st.get("finished") or st.get("calls") != args.budget or st.get("awaiting"):
        problems.append("status at the end: %s" % st)
    print("soak: %d clients, budget %d, server started %d times (killed %d), %d calls logged, %d ids handed out"
          % (args.clients, args.budget, server.starts, server.starts - 1, len(calls), len(handed)))
    for line in problems:
        print("PROBLEM:", line)
    print("PASS" if not problems else "FAIL")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
