#!/usr/bin/env python3
"""Soak test of the NATS JetStream queue: `nfbo optimize -queue` and K `nfbo worker`s under kill -9.

Two runs of the same command and seed, each with a nats-server of its own (-js, a temporary store, a free
port) and K workers whose objective program (written into DIR) logs every molecule it receives, with its
worker's pid and the time, and sleeps 0.3-0.8 s per molecule:

  - baseline: nothing is killed;
  - soak: every 1-3 s a worker scoring a molecule (or, one time in five when none is, an idle one) is killed
    with SIGKILL and a new one started; the optimiser is
    killed with SIGKILL -opt-kills times (and resumed at once with the same command and -resume); the
    nats-server is killed once with SIGKILL, kept down -server-down seconds and started again on the same
    port and store.

At the end the soak's evaluation log must hold exactly the budget's calls, each molecule once, each with the
score the objective gives it; it must equal the baseline's log molecule for molecule (same molecules, same
scores, same order); and every molecule the objective program received more than once must be explained by a
fault: the worker that received it earlier was killed before that worker answered it, or the server was down
while that worker scored it.

    scripts/queue-soak.py [-nfbo bin/nfbo] [-workers 4] [-budget 120] [-seed 1] [-soak-seed 1] [-max-deliver 10]
                          [-baseline-from OLDDIR/baseline] DIR

DIR is made (it must not exist). Standard library only; needs nats-server and RDKit for /usr/bin/python3.
"""
import argparse
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time

# The objective program: RDKit's QED of the molecule, so that the score depends on the molecule and not on its
# spelling; every molecule received is logged (one line, one write, O_APPEND) before it is scored and again
# when it is answered.
OBJECTIVE = r'''
import json, os, random, sys, time
from rdkit import Chem, RDLogger
from rdkit.Chem import QED
RDLogger.DisableLog("rdApp.*")
LOG = os.environ["SOAK_RECEIVED"]
SLEEP = [float(x) for x in os.environ.get("SOAK_SLEEP", "0.1,0.3").split(",")]

def log(ev, smi, canon):
    line = json.dumps({"ev": ev, "t": time.time(), "worker": os.getppid(), "pid": os.getpid(),
                       "smiles": smi, "canonical": canon}) + "\n"
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, line.encode())
    os.close(fd)

for line in sys.stdin:
    req = json.loads(line)
    if req.get("op") != "score":
        print(json.dumps({"id": req.get("id"), "ok": False, "error": "unknown op"}), flush=True)
        continue
    scores, errors = [], []
    for smi in req["smiles"]:
        mol = Chem.MolFromSmiles(smi) if smi else None
        canon = Chem.MolToSmiles(mol) if mol is not None else ""
        log("recv", smi, canon)
        time.sleep(random.uniform(*SLEEP))
        scores.append(QED.qed(mol) if mol is not None else None)
        errors.append("" if mol is not None else "invalid SMILES")
        log("done", smi, canon)
    print(json.dumps({"id": req.get("id"), "ok": True, "scores": scores, "errors": errors}), flush=True)
'''


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Session:
    """One run: a nats-server, K workers and the optimiser, each a process of ours, with what happened to them."""

    def __init__(self, args, dir, rng):
        self.args, self.dir, self.rng = args, dir, rng
        os.makedirs(dir)
        self.port = free_port()
        self.url = "nats://127.0.0.1:%d" % self.port
        self.store = os.path.join(dir, "nats")
        self.received = os.path.join(dir, "received.jsonl")
        self.out = os.path.join(dir, "run")
        self.t0 = time.time()
        self.server = None
        self.server_starts = 0
        self.down = []  # (from, to) times the server was down
        self.workers = []  # live worker processes
        self.worker_starts = 0
        self.worker_kills = []  # (time, pid)
        self.opt = None
        self.opt_starts = 0
        self.opt_kills = []  # (time, calls in the log)
        self.files = []

    def log(self, name):
        f = open(os.path.join(self.dir, name), "w")
        self.files.append(f)
        return f

    def start_server(self):
        log = self.log("nats-%d.log" % self.server_starts)
        self.server = subprocess.Popen([self.args.nats_server, "-js", "-a", "127.0.0.1", "-p", str(self.port),
                                        "-sd", self.store], stdout=log, stderr=subprocess.STDOUT)
        self.server_starts += 1
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise SystemExit("nats-server did not listen on %d: see %s" % (self.port, log.name))

    def start_worker(self):
        log = self.log("worker-%d.log" % self.worker_starts)
        env = dict(os.environ, SOAK_RECEIVED=self.received, SOAK_SLEEP=self.args.sleep)
        p = subprocess.Popen([self.args.nfbo, "worker", "-queue", self.url, "-task", "soak", "-objective-cmd",
                              "/usr/bin/python3 " + os.path.join(os.path.dirname(self.dir), "objective.py"),
                              "-ack-wait", self.args.ack_wait, "-max-deliver", str(self.args.max_deliver)], stdout=log, stderr=subprocess.STDOUT, env=env)
        self.worker_starts += 1
        self.workers.append(p)

    def optimise_cmd(self):
        a = self.args
        return [a.nfbo, "optimize", "-queue", self.url, "-task", "soak", "-objective-cmd", "soak objective",
                "-init", a.init, "-init-count", str(a.init_count), "-budget", str(a.budget), "-model", a.model,
                "-rules", "none", "-seed", str(a.seed), "-out", self.out]

    def start_opt(self):
        cmd = self.optimise_cmd() + (["-resume"] if self.opt_starts else [])
        log = self.log("optimize-%d.log" % self.opt_starts)
        self.opt = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        self.opt_starts += 1

    def calls(self):
        try:
            with open(os.path.join(self.out, "evaluations.jsonl")) as f:
                return sum(1 for line in f if line.strip())
        except FileNotFoundError:
            return 0

    def busy(self):
        """The pids of the workers scoring a molecule now, by the objective program's log."""
        last = {}
        try:
            for line in open(self.received):
                e = json.loads(line)
                last[e["worker"]] = e["ev"]
        except (FileNotFoundError, ValueError):
            pass
        return {pid for pid, ev in last.items() if ev == "recv"}

    def kill_worker(self):
        """Kills a random busy worker, or else (one time in five) a random idle one; says whether it killed."""
        busy = [i for i, p in enumerate(self.workers) if p.pid in self.busy()]
        if not busy and self.rng.random() > 0.2:
            return False
        p = self.workers.pop(self.rng.choice(busy or range(len(self.workers))))
        p.send_signal(signal.SIGKILL)
        p.wait()
        self.worker_kills.append((time.time(), p.pid, bool(busy)))
        self.start_worker()
        return True

    def kill_opt(self):
        self.opt.send_signal(signal.SIGKILL)
        self.opt.wait()
        self.opt_kills.append((time.time(), self.calls()))
        self.start_opt()

    def restart_server(self):
        self.server.send_signal(signal.SIGKILL)
        self.server.wait()
        t = time.time()
        time.sleep(self.args.server_down)
        self.start_server()
        self.down.append((t, time.time()))

    def run(self, faults):
        a = self.args
        self.start_server()
        for _ in range(a.workers):
            self.start_worker()
        self.start_opt()
        # The optimiser and the server are killed when the log reaches these counts, the workers on a timer.
        span = a.budget - a.init_count // 2
        marks = sorted(a.init_count // 2 + int(span * self.rng.uniform(lo, hi))
                       for lo, hi in [(0.05, 0.3), (0.4, 0.6), (0.65, 0.9)][:a.opt_kills + 1])
        events = []
        if faults:
            server_at = marks.pop(len(marks) // 2) if a.opt_kills else marks.pop()
            events = [(n, "opt") for n in marks[:a.opt_kills]] + [(server_at, "server")]
            events.sort()
        next_worker = time.time() + self.rng.uniform(*a.every)
        deadline = time.time() + a.timeout
        try:
            while self.opt.poll() is None:
                if time.time() > deadline:
                    raise SystemExit("the run did not finish in %ds: see %s" % (a.timeout, self.dir))
                n = self.calls()
                if events and n >= events[0][0]:
                    _, what = events.pop(0)
                    self.kill_opt() if what == "opt" else self.restart_server()
                if faults and time.time() >= next_worker:
                    killed = self.kill_worker()
                    next_worker = time.time() + (self.rng.uniform(*a.every) if killed else 0.5)
                time.sleep(0.05)
            return self.opt.returncode
        finally:
            self.stop()  # every process started, whatever happened

    def stop(self):
        for p in self.workers + [self.opt, self.server]:
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait()
        for f in self.files:
            f.close()

    def evaluations(self):
        with open(os.path.join(self.out, "evaluations.jsonl")) as f:
            return [json.loads(line) for line in f if line.strip()]

    def deliveries(self):
        """Per canonical SMILES, the receipts in time order: (time, worker pid, time answered or None)."""
        recv = {}
        try:
            lines = [json.loads(line) for line in open(self.received)]
        except FileNotFoundError:
            return {}
        done = {}
        for e in lines:
            if e["ev"] == "done":
                done.setdefault((e["pid"], e["canonical"]), []).append(e["t"])
        for e in lines:
            if e["ev"] == "recv":
                ts = [t for t in done.get((e["pid"], e["canonical"]), []) if t >= e["t"]]
                recv.setdefault(e["canonical"], []).append((e["t"], e["worker"], min(ts) if ts else None))
        for v in recv.values():
            v.sort()
        return recv


def explain(s, receipt, again):
    """Why a molecule received at receipt was received again at time again: the faults between them that explain
    it, or None."""
    t, worker, answered = receipt
    why = []
    for tk, pid, _ in s.worker_kills:
        if pid == worker and t <= tk <= again:
            if answered is None or answered > tk:
                why.append("worker %d killed at +%.1fs, %.1fs into the molecule" % (pid, tk - s.t0, tk - t))
            else:
                why.append("worker %d answered it at +%.1fs and was killed at +%.1fs, before its result was acknowledged"
                           % (pid, answered - s.t0, tk - s.t0))
    killed = min([tk for tk, pid, _ in s.worker_kills if pid == worker and tk >= t], default=None)
    for a, b in s.down:
        end = answered if answered is not None else killed
        if t <= b and a <= again and (end is None or end >= a - 1):
            why.append("server down +%.1f..+%.1fs while worker %d scored it (received +%.1fs, answered %s)" % (
                a - s.t0, b - s.t0, worker, t - s.t0, "+%.1fs" % (answered - s.t0) if answered else "never"))
    return "; ".join(why) or None


def iterations(session):
    """The log's batch boundaries, by the optimiser's progress lines: the initial molecules, then each iteration."""
    ends = [session.args.init_count]
    for name in sorted(os.listdir(session.dir)):
        if name.startswith("optimize-"):
            for line in open(os.path.join(session.dir, name)):
                m = re.match(r"iter \d+ calls (\d+)/", line)
                if m and session.args.init_count + int(m.group(1)) not in ends:
                    ends.append(session.args.init_count + int(m.group(1)))
    return sorted(ends)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-nfbo", default="bin/nfbo")
    p.add_argument("-nats-server", default="/usr/sbin/nats-server")
    p.add_argument("-model", default="data/models/small")
    p.add_argument("-init", default="data/guacamol/guacamol_train_data_first_100.csv")
    p.add_argument("-init-count", type=int, default=40)
    p.add_argument("-budget", type=int, default=120)
    p.add_argument("-seed", type=int, default=1, help="the optimiser's seed")
    p.add_argument("-soak-seed", type=int, default=1, help="seed of the kills' victims and times")
    p.add_argument("-workers", type=int, default=4)
    p.add_argument("-every", type=float, nargs=2, default=[1, 3],
                   help="seconds between worker kills (uniform); a busy worker is killed, or else one time in five an idle one")
    p.add_argument("-opt-kills", type=int, default=2)
    p.add_argument("-server-down", type=float, default=3)
    p.add_argument("-ack-wait", default="5s", help="the workers' -ack-wait")
    p.add_argument("-max-deliver", type=int, default=10, help="the workers' -max-deliver (deliveries, dead workers included)")
    p.add_argument("-sleep", default="0.3,0.8", help="objective seconds per molecule, uniform between")
    p.add_argument("-timeout", type=int, default=1800, help="seconds each run may take")
    p.add_argument("-baseline-from", metavar="DIR", help="take the uninterrupted run from DIR (an earlier soak's "
                   "DIR/baseline, same flags) rather than running it")
    p.add_argument("-no-baseline", action="store_true", help="skip the uninterrupted run (no equality check)")
    p.add_argument("dir")
    args = p.parse_args()
    os.makedirs(args.dir)
    with open(os.path.join(args.dir, "objective.py"), "w") as f:
        f.write(OBJECTIVE)
    rng = random.Random(args.soak_seed)
    problems = []

    base = None
    if args.baseline_from:
        base = Session.__new__(Session)
        base.args, base.dir = args, args.baseline_from
        base.out, base.received = os.path.join(base.dir, "run"), os.path.join(base.dir, "received.jsonl")
    elif not args.no_baseline:
        base = Session(args, os.path.join(args.dir, "baseline"), rng)
        rc = base.run(faults=False)
        if rc != 0:
            problems.append("baseline: optimize exited %d" % rc)
        print("baseline: %.0fs, %d calls" % (time.time() - base.t0, base.calls()))
    soak = Session(args, os.path.join(args.dir, "soak"), rng)
    rc = soak.run(faults=True)
    if rc != 0:
        problems.append("soak: optimize exited %d" % rc)

    calls = soak.evaluations()
    seen = set()
    for rec in calls:
        key = rec.get("canonical") or rec.get("smiles")
        if key in seen:
            problems.append("%s paid twice" % key)
        seen.add(key)
    if len(calls) != args.budget:
        problems.append("%d calls in the soak's log, budget %d" % (len(calls), args.budget))
    equal = ordered = None
    if base is not None:
        # Results are logged as they arrive, so within a batch the order is the workers'; the optimiser sees each
        # batch in its own order. Equal means: the same molecules with the same scores, batch for batch.
        ref = base.evaluations()
        pairs = lambda log: [(r.get("canonical") or r.get("smiles"), r.get("score")) for r in log]
        ordered = pairs(calls) == pairs(ref)
        ends = iterations(base)
        equal = len(calls) == len(ref)
        if not equal:
            problems.append("the soak's log has %d calls, the baseline's %d" % (len(calls), len(ref)))
        lo = 0
        for hi in ends:
            a, b = sorted(pairs(calls)[lo:hi]), sorted(pairs(ref)[lo:hi])
            if a != b and set(a) - set(b):
                equal = False
                problems.append("calls %d-%d: %d molecules (or scores) of the soak's are not the baseline's, e.g. %s"
                                % (lo + 1, hi, len(set(a) - set(b)), sorted(set(a) - set(b))[:1]))
            lo = hi
    dups = {k: v for k, v in soak.deliveries().items() if len(v) > 1}
    extra = sum(len(v) - 1 for v in dups.values())
    explained = []
    for key, receipts in sorted(dups.items(), key=lambda kv: kv[1][0][0]):
        for r, later in zip(receipts, receipts[1:]):
            why = explain(soak, r, later[0])
            if why is None:
                problems.append("%s received %d times, at +%s: unexplained" % (
                    key, len(receipts), ", +".join("%.1fs" % (x[0] - soak.t0) for x in receipts)))
            else:
                explained.append("%s again: %s" % (key, why))
        if len(receipts) >= args.max_deliver and key not in seen:
            problems.append("%s given up after %d deliveries, every one cut short by a fault: not in the log"
                            % (key, len(receipts)))
    if base is not None:
        bdups = {k: v for k, v in base.deliveries().items() if len(v) > 1}
        for key, receipts in bdups.items():
            problems.append("baseline: %s received %d times with nothing killed" % (key, len(receipts)))

    print("soak: %.0fs, %d workers, budget %d (%d initial): %d worker kills (%d busy), optimiser killed %d times (at %s calls), "
          "server restarted %d times (down %s); %d calls logged, %d distinct; %d molecules received twice or more "
          "(%d extra receipts); equal to the baseline batch for batch: %s (in the same order: %s)"
          % (time.time() - soak.t0, args.workers, args.budget, args.init_count, len(soak.worker_kills),
             sum(1 for k in soak.worker_kills if k[2]),
             len(soak.opt_kills), ", ".join(str(n) for _, n in soak.opt_kills), len(soak.down),
             ", ".join("%.1fs" % (b - a) for a, b in soak.down), len(calls), len(seen), len(dups), extra,
             "not run" if equal is None else equal, ordered))
    for line in explained:
        print("  " + line)
    for line in problems:
        print("PROBLEM:", line)
    print("PASS" if not problems else "FAIL")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
