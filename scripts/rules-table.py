#!/usr/bin/python3
"""The table of BENCHMARKS.md's sections on what the default rules cost (issue #57): for one setting of
benchmarks/rules.tsv, per task and method (none: -rules none; rules: the default rules), the fractions of the
optimiser's paid molecules that hold an NIH alert, an alert of the default list, an unseen atom environment or
either (scripts/rules-fractions.py --new, means over the seeds), Top-10 and AUC Top-10 (mean ± sd) and seconds a
run; then the sums over the tasks and the paired counts.

  /usr/bin/python3 scripts/rules-table.py SETTING RUNS [ROWS]

RUNS holds the runs as bench writes them (RUNS/TASK/METHOD/seedN); ROWS is benchmarks/rules.tsv by default.
"""
import csv
import os
import statistics as st
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    setting, runs = sys.argv[1], sys.argv[2]
    rows_path = sys.argv[3] if len(sys.argv) > 3 else os.path.join(HERE, "..", "benchmarks", "rules.tsv")
    with open(rows_path) as f:
        rows = [r for r in csv.DictReader(f, delimiter="\t") if r["setting"] == setting]
    by = {}
    for r in rows:
        by.setdefault((r["task"], r["method"]), {})[int(r["seed"])] = r
    tasks = sorted({t for t, _ in by})
    dirs = [os.path.join(runs, t, m, "seed%d" % s) for (t, m), seeds in sorted(by.items()) for s in sorted(seeds)]
    out = subprocess.run([sys.executable, os.path.join(HERE, "rules-fractions.py"), "--new"] + dirs,
                         capture_output=True, text=True, check=True).stdout.splitlines()[1:]
    frac = {}
    for line in out:
        f = line.split("\t")
        frac[f[0]] = [float(v) for v in f[2:6]]
    print("| task | rules | NIH alert | default-list alert | unseen environment | either | Top-10 | AUC Top-10 | s/run |")
    print("|---|---|---|---|---|---|---|---|---|")
    sums = {}
    for t in tasks:
        for m in ("none", "rules"):
            seeds = by.get((t, m), {})
            if not seeds:
                continue
            fr = [frac[os.path.join(runs, t, m, "seed%d" % s)] for s in sorted(seeds)]
            mean = [100 * st.mean(c) for c in zip(*fr)]
            top10 = [float(seeds[s]["top10"]) for s in sorted(seeds)]
            auc = [float(seeds[s]["auc_top10"]) for s in sorted(seeds)]
            secs = st.mean(float(seeds[s]["seconds"]) for s in seeds)
            sd = lambda v: st.stdev(v) if len(v) > 1 else 0.0
            name = "-rules none" if m == "none" else "**default**"
            print("| %s | %s | %.1f %% | %.1f %% | %.1f %% | %.1f %% | %.3f ± %.3f | %.3f ± %.3f | %.0f |" % (
                t, name, *mean, st.mean(top10), sd(top10), st.mean(auc), sd(auc), secs))
            s = sums.setdefault(m, [0.0, 0.0, [], len(seeds)])
            s[0] += st.mean(top10)
            s[1] += st.mean(auc)
            s[2].append(fr)
            s[3] = min(s[3], len(seeds))
    print()
    for m, (t10, auc, fr, _) in sums.items():
        flat = [x for task in fr for x in task]
        mean = [100 * st.mean(c) for c in zip(*flat)]
        print("%s: Top-10 summed %.3f, AUC Top-10 summed %.3f; of the paid molecules NIH %.1f %%, default list %.1f %%, "
              "unseen environment %.1f %%, either %.1f %%" % (m, t10, auc, *mean))
    higher = [0, 0, 0]
    for (t, m), seeds in by.items():
        if m != "rules":
            continue
        for s, r in seeds.items():
            base = by.get((t, "none"), {}).get(s)
            if base:
                higher[0] += float(r["top10"]) > float(base["top10"])
                higher[1] += float(r["auc_top10"]) > float(base["auc_top10"])
                higher[2] += 1
    print("paired: rules higher in Top-10 in %d of %d runs, in AUC Top-10 in %d" % (higher[0], higher[2], higher[1]))


if __name__ == "__main__":
    main()
