#!/usr/bin/python3
"""The table of BENCHMARKS.md's sections on what the default rules cost (issue #57): for one setting of
benchmarks/rules.tsv, per task and method (none: -rules none; rules: the default rules), the fractions of the
optimiser's paid molecules that hold an NIH alert, an alert of the default list, an unseen atom environment or
either (scripts/rules-fractions.py --new, means over the seeds), Top-10 and AUC Top-10 (mean ± sd) and seconds a
run; then the sums over the tasks and the paired counts.

  /usr/bin/python3 scripts/rules-table.py SETTING RUNS [ROWS]
  /usr/bin/python3 scripts/rules-table.py SETTING --none ROWS METHOD RUNS --rules ROWS METHOD RUNS

RUNS holds the runs as bench writes them (RUNS/TASK/METHOD/seedN); ROWS is benchmarks/rules.tsv by default, where
the methods are named none and rules. The second form takes each side from a rows file and method of its own (at
PMO's budget the default's rows are the pmo20 campaign's, method nfbo), and keeps the tasks and seeds both have.
"""
import csv
import os
import statistics as st
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load(rows_path, setting, method, label, by):
    with open(rows_path) as f:
        for r in csv.DictReader(f, delimiter="\t"):
            if r["setting"] == setting and r["method"] == method:
                by.setdefault((r["task"], label), {})[int(r["seed"])] = r


def main():
    setting, args = sys.argv[1], sys.argv[2:]
    by, roots = {}, {}
    if args[0] == "--none":
        for label, (rows_path, method, runs) in (("none", args[1:4]), ("rules", args[5:8])):
            load(rows_path, setting, method, label, by)
            roots[label] = (runs, method)
        # Only the tasks and seeds both sides have.
        for t in {t for t, _ in by}:
            a, b = by.get((t, "none"), {}), by.get((t, "rules"), {})
            both = set(a) & set(b)
            for side in (a, b):
                for seed in set(side) - both:
                    del side[seed]
            if not both:
                by.pop((t, "none"), None)
                by.pop((t, "rules"), None)
    else:
        runs = args[0]
        rows_path = args[1] if len(args) > 1 else os.path.join(HERE, "..", "benchmarks", "rules.tsv")
        for label in ("none", "rules"):
            load(rows_path, setting, label, label, by)
            roots[label] = (runs, label)
    run_dir = lambda t, m, s: os.path.join(roots[m][0], t, roots[m][1], "seed%d" % s)
    tasks = sorted({t for t, _ in by})
    dirs = [run_dir(t, m, s) for (t, m), seeds in sorted(by.items()) for s in sorted(seeds)]
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
            fr = [frac[run_dir(t, m, s)] for s in sorted(seeds)]
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
