#!/usr/bin/env bash
# pmo20-pmo-report.sh [BIN]: BENCHMARKS.md's tables of "pmo20 with PMO's protocol: random starts, five seeds", from
# the rows in benchmarks/pmo20.tsv alone: `nfbo report` on them (BIN, default bin/nfbo), its setting
# "1000+9000 random" (the per-task table, the sums, AUC Top-10 side by side with the published figures), then the
# seconds per run by task and method, the runs missing from the 5 seeds × 20 tasks of each method, and the default
# against graph-ga task by task.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-bin/nfbo}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$bin" report -plots=false -html=false -out "$out" benchmarks/pmo20.tsv > /dev/null
awk '/^### Setting 1000\+9000 random/{on=1} /^### Setting/ && !/random/{on=0} on' "$out/report.md" | grep -v '^Written by'
echo
echo "Seconds per run (mean over the seeds' rows, their number in brackets; wall time on the 2-core machine, shared"
echo "with other work, and nfbo's own CPU seconds after it where every row of the cell has them: rows of f302b98 on):"
echo
python3 - benchmarks/pmo20.tsv <<'PY'
import csv, sys
secs, cpu, tasks, methods = {}, {}, set(), set()
with open(sys.argv[1]) as f:
    for r in csv.DictReader(f, delimiter="\t"):
        if r["setting"] == "1000+9000 random" and r["finished"] == "true":
            secs.setdefault((r["task"], r["method"]), []).append(float(r["seconds"]))
            cpu.setdefault((r["task"], r["method"]), []).append(float(r.get("cpu_seconds") or 0))
            tasks.add(r["task"])
            methods.add(r["method"])
def cell(k):
    c = secs.get(k)
    if not c:
        return " — |"
    s = f" {sum(c) / len(c):.0f} ({len(c)})"
    if all(v > 0 for v in cpu[k]):
        s += f", CPU {sum(cpu[k]) / len(cpu[k]):.0f}"
    return s + " |"
ms = sorted(methods)
print("| task |" + "".join(f" {m} |" for m in ms))
print("|---|" + "---|" * len(ms))
for t in sorted(tasks):
    print(f"| {t} |" + "".join(cell((t, m)) for m in ms))
missing = ", ".join(f"{m} {100 - sum(len(v) for (t, mm), v in secs.items() if mm == m)} of 100" for m in ms)
print(f"\nRuns missing (of 5 seeds × 20 tasks): {missing}.")
PY
echo
python3 - benchmarks/pmo20.tsv <<'PY'
import csv, statistics, sys
auc = {}
with open(sys.argv[1]) as f:
    for r in csv.DictReader(f, delimiter="\t"):
        if r["finished"] == "true":
            auc.setdefault((r["setting"], r["task"], r["method"]), []).append(float(r["auc_top10"]))
def stats(setting, task, method):
    v = auc.get((setting, task, method))
    if not v:
        return None
    return statistics.mean(v), statistics.stdev(v) if len(v) > 1 else 0.0, len(v)
def fmt(s):
    return "—" if s is None else f"{s[0]:.3f} ± {s[1]:.3f} ({s[2]})"
random = "1000+9000 random"
tasks = sorted({t for (s, t, m) in auc if s == random and m == "graph-ga"})

print("graph-ga (random starts) beside the default at the fixed start (setting 1000+9000, its 3 seeds; other starts, never pooled):")
print()
print("| task | graph-ga, random starts | the default, fixed start | default − graph-ga |")
print("|---|---|---|---|")
above = 0
for t in tasks:
    g, d = stats(random, t, "graph-ga"), stats("1000+9000", t, "nfbo")
    diff = f"{d[0] - g[0]:+.3f}" if g and d else "—"
    above += bool(g and d and d[0] > g[0])
    print(f"| {t} | {fmt(g)} | {fmt(d)} | {diff} |")
print(f"\nThe fixed-start default's mean is above graph-ga's on {above} of these {len(tasks)} tasks.")

print()
print("The default (nfbo) against graph-ga under PMO's protocol, task by task: AUC Top-10 mean ± sd over the seeds (their")
print("number in brackets; the same draws seed by seed), the difference of the means, and whether it is larger than the")
print("seeds' spread (the larger of the two sds):")
print()
print("| task | nfbo | graph-ga | nfbo − graph-ga | beyond the spread |")
print("|---|---|---|---|---|")
beyond = compared = 0
for t in tasks:
    d, g = stats(random, t, "nfbo"), stats(random, t, "graph-ga")
    if d is None or g is None:
        print(f"| {t} | {fmt(d)} | {fmt(g)} | — | — |")
        continue
    compared += 1
    diff, spread = d[0] - g[0], max(d[1], g[1])
    ok = diff > spread and d[2] > 1
    beyond += ok
    verdict = "yes" if ok else ("one seed" if d[2] == 1 else "no")
    print(f"| {t} | {fmt(d)} | {fmt(g)} | {diff:+.3f} | {verdict} |")
print(f"\nThe default is above graph-ga by more than the spread on {beyond} of the {compared} tasks with rows of both.")
PY
