#!/usr/bin/env python3
"""Two methods' runs paired by task and seed, from the runs.tsv rows that nfbo bench and nfbo report write.

    scripts/paired-rows.py [-metric auc_top10] [-tasks T1,T2] [-setting S] FILE:METHOD FILE:METHOD

The first is the baseline, the second the method measured against it (an ablation's rows against the default's,
say: benchmarks/crossover.tsv:idnf200 benchmarks/pmo20.tsv:nfbo). Only finished runs count, and only the
(task, seed) pairs both have. One Markdown row per task: the baseline's mean ± sd, the method's, the difference
of the means, and the difference at each seed; then the sums over the tasks and how many pairs the method leads.
A file may hold a method's runs under several settings (benchmarks/pmo20.tsv: "1000+9000" from the fixed start,
"1000+9000 random" under PMO's protocol): then -setting says which, as runs of two settings never pair.
Pairs whose rows name different kernels (the kernels column, where both have one) are counted and said on stderr:
runs with the flow on other BLAS kernels buy other molecules (docs/USAGE.md, "Repeating a run").
Standard library only.
"""
import argparse
import csv
import statistics
import sys


def rows(spec, metric, setting):
    path, sep, method = spec.rpartition(":")
    if not sep or not path or not method:
        sys.exit(f"paired-rows: {spec!r}: want FILE:METHOD")
    out, kernels, settings = {}, {}, set()
    with open(path, newline="") as f:
        for n, r in enumerate(csv.DictReader(f, delimiter="\t"), 2):
            if r.get("method") != method or r.get("finished") != "true":
                continue
            if setting is not None and r.get("setting") != setting:
                continue
            settings.add(r.get("setting"))
            try:
                out[(r["task"], int(r["seed"]))] = float(r[metric])
                kernels[(r["task"], int(r["seed"]))] = r.get("kernels") or ""
            except (KeyError, ValueError) as e:
                sys.exit(f"{path}:{n}: {metric}: {e}")
    if len(settings) > 1:
        sys.exit(f"paired-rows: {path}: method {method!r} has runs under settings {sorted(settings)}; "
                 "say which with -setting")
    if not out:
        sys.exit(f"paired-rows: {path}: no finished runs of method {method!r}"
                 + (f" under setting {setting!r}" if setting is not None else ""))
    return out, kernels


def mean_sd(v):
    return f"{statistics.mean(v):.3f} ± {statistics.stdev(v):.3f}" if len(v) > 1 else f"{v[0]:.3f}"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-metric", default="auc_top10", help="a column of runs.tsv (auc_top10, top10, ...)")
    p.add_argument("-tasks", default="", help="only these tasks, comma-separated")
    p.add_argument("-setting", default=None, help="only runs of this setting (runs.tsv's setting column)")
    p.add_argument("base", help="FILE:METHOD, the baseline")
    p.add_argument("other", help="FILE:METHOD, measured against the baseline")
    a = p.parse_args()
    (base, kb), (other, ko) = rows(a.base, a.metric, a.setting), rows(a.other, a.metric, a.setting)
    want = set(a.tasks.split(",")) if a.tasks else None
    tasks = sorted({t for t, s in base if (t, s) in other and (want is None or t in want)})
    print(f"| {a.metric} | {a.base} | {a.other} | difference | per seed |")
    print("|---|---|---|---|---|")
    sb = so = 0.0
    pairs = ahead = 0
    for t in tasks:
        seeds = sorted(s for tt, s in base if tt == t and (t, s) in other)
        b = [base[(t, s)] for s in seeds]
        o = [other[(t, s)] for s in seeds]
        pairs += len(seeds)
        ahead += sum(y > x for x, y in zip(b, o))
        sb += statistics.mean(b)
        so += statistics.mean(o)
        per = ", ".join(f"{y - x:+.3f} (seed {s})" for s, x, y in zip(seeds, b, o))
        print(f"| {t} | {mean_sd(b)} | {mean_sd(o)} | {statistics.mean(o) - statistics.mean(b):+.3f} | {per} |")
    print(f"| **sum** | {sb:.3f} | {so:.3f} | {so - sb:+.3f} | {a.other} ahead in {ahead} of {pairs} pairs |")
    mixed = sorted({(kb[k], ko[k]) for k in base if k in other and kb[k] and ko[k] and kb[k] != ko[k]})
    for x, y in mixed:
        n = sum(1 for k in base if k in other and (kb[k], ko[k]) == (x, y))
        print(f"paired-rows: {n} pair(s) ran on other kernels: {x!r} against {y!r}", file=sys.stderr)


if __name__ == "__main__":
    main()
