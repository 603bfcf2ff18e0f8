#!/usr/bin/env python3
"""Top-10 of runs' paid calls at chosen call counts: where a run climbs and where it stalls.

    scripts/top10-at.py [-at 1000,3000,5000,10000] [-k 10] [-lost] RUNDIR|evaluations.jsonl ...

For each run (a run directory or its evaluations.jsonl), one line: the run, then the mean of the k best scores
among the first N paid calls for each N of -at (missing scores count 0, as in nfbo's Top-k). With -lost, each
cell is instead what the climb costs AUC Top-k in the calls from the previous N (or the first call) to N: the sum
over those calls of (the run's final Top-k − its Top-k after the call), divided by the last N. The cells add up to
the final Top-k less the AUC, the most a faster climb to the same molecules could add. Free initial scores
(guacamol's 100+500) are not in the log's paid calls and so not counted here. Standard library only.
"""
import argparse
import heapq
import json
import os
import sys


def scores(path):
    """The scores of the log's paid calls in call order (a failed call, score null, counts as 0)."""
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{n}: {e}")
            s = r.get("score")
            out.append(float(s) if s is not None else 0.0)
    return out


def lost(sc, at, k):
    """Cells of -lost: AUC Top-k lost to the climb in each range of calls ending at a count of at."""
    if at[-1] > len(sc):
        return ["—"] * len(at)
    best, curve = [], []
    for s in sc[: at[-1]]:
        heapq.heappush(best, s)
        if len(best) > k:
            heapq.heappop(best)
        curve.append(sum(best) / k)
    final, cells, lo = curve[-1], [], 0
    for n in at:
        cells.append(f"{sum(final - c for c in curve[lo:n]) / at[-1]:.3f}")
        lo = n
    return cells


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-at", default="1000,3000,5000,10000", help="call counts, comma-separated")
    p.add_argument("-k", type=int, default=10, help="how many of the best scores are averaged")
    p.add_argument("-lost", action="store_true", help="AUC Top-k lost to the climb between the -at counts")
    p.add_argument("runs", nargs="+", help="run directories or evaluations.jsonl files")
    a = p.parse_args()
    at = [int(x) for x in a.at.split(",")]
    head = "lost" if a.lost else "top"
    print("run\t" + "\t".join(f"{head}{a.k}@{n}" for n in at))
    for run in a.runs:
        path = os.path.join(run, "evaluations.jsonl") if os.path.isdir(run) else run
        sc = scores(path)
        if a.lost:
            print(run + "\t" + "\t".join(lost(sc, at, a.k)))
            continue
        cells = []
        for n in at:
            if n > len(sc):
                cells.append("—")
                continue
            best = sorted(sc[:n], reverse=True)[: a.k]
            cells.append(f"{sum(best) / a.k:.3f}")
        print(run + "\t" + "\t".join(cells))


if __name__ == "__main__":
    main()
