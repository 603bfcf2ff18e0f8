#!/usr/bin/python3
"""Generates the default chemistry rules' data from molecules chemists made (issue #57).

For every alert of RDKit's FilterCatalog catalogues NIH, BRENK and ZINC it counts the molecules of ZINC250k
(data/zinc250k/zinc.txt.gz) and of GuacaMol 10k (data/guacamol/guacamol_10k.smiles) that hold it, and marks
as default ("yes") the alerts whose frequency is below THRESHOLD in both sets and those of REJECT, a hand-made
list of groups a chemist rejects whatever their frequency; and it collects every Morgan
radius-1 atom environment (RDKit's unhashed Morgan identifiers, radius 0 and 1, no chirality) those molecules
hold, with how many molecules hold each. It writes

  data/rules/alerts.tsv             one alert a line: catalogue, name, SMARTS, min_count, counts, frequencies,
                                    default (yes/no), reason (rare, REJECT's reason, or empty); a
                                    reviewable list embedded in the binary
  data/rules/environments.txt.gz    one environment a line: identifier, molecules holding it

Run with Debian's RDKit, niced, in the background (about an hour on a 2-core machine):

  nohup nice -n 15 /usr/bin/python3 scripts/gen-rules.py > gen-rules.log 2>&1 &

It is resumable: counts are kept per block of molecules in $NFBO_GEN_DIR (default .gen-rules/) and a block
already counted is read back. Each alert's SMARTS is RDKit's own pattern, read from the catalogue entry's
serialised form; the script checks on the first 20,000 molecules of each set that the SMARTS (with its minimum
count) matches exactly when RDKit's catalogue entry does, and stops on any difference.

When only REJECT or THRESHOLD changed, `scripts/gen-rules.py --relabel` rewrites alerts.tsv's default and reason
columns from the counts it holds, in a second.
"""
import datetime
import gzip
import json
import os
import re
import sys
import time

from rdkit import Chem, RDLogger, rdBase
from rdkit.Chem import FilterCatalog as FC
from rdkit.Chem import rdMolDescriptors

THRESHOLD = 0.001  # 0.1 %
CATALOGUES = ["NIH", "BRENK", "ZINC"]
# Patterns of our own (catalogue "NFBO"), counted and thresholded as the catalogues' alerts are: rings that an
# optimiser's moves make often (12 % and 6 % of the quick start's paid molecules before they were rules) and
# real molecules almost never hold, which no catalogue names. A cyclopentadiene dimerises (Diels-Alder) and shifts
# its hydrogens; a fulvene, which the same pattern matches, is as reactive. A cyclohexa-1,3-diene whose other two
# ring atoms are sp3 is a dihydrobenzene: it aromatises. (Cross-conjugated dienones, steroids' ring A, do not
# match: their diene is 1,4, and a ring C=O is excluded.)
OWN = [
    ("cyclopentadiene", "C1=CC=CC1"),
    ("dihydrobenzene", "C1=CC=C[C;!$(C=*)][C;!$(C=*)]1"),
]
# Alerts a medicinal chemist rejects on sight whatever their frequency, made default though more than THRESHOLD
# of one set holds them (ZINC250k holds building blocks and reagents; GuacaMol 10k, ChEMBL's tool compounds and
# natural products): the group reacts with proteins or DNA, falls apart, or is a known mutagen. Each with the
# reason alerts.tsv gives. None of the GuacaMol and PMO targets holds one. Left out on purpose: Michael acceptors
# (covalent drugs such as osimertinib, a PMO target, hold an acrylamide), beta-lactams, hydroxamic acids, nitro
# groups, catechols, alkynes and imines, which approved drugs hold; NIH's cyanohydrin, which matches an
# N-cyanomethyl amide (momelotinib's), and BRENK's charged oxygen or sulfur, which matches a sulfoxide written
# with separated charges (C[S@@+]([O-])C, as chiral sulfoxides are).
REJECT = {
    ("BRENK", "peroxide"): "reactive: peroxide, an oxidant",
    ("NIH", "peroxide"): "reactive: peroxide, an oxidant",
    ("ZINC", "Peroxides"): "reactive: peroxide, an oxidant",
    ("BRENK", "N-nitroso"): "mutagen: N-nitroso",
    ("BRENK", "Azido_group"): "reactive: azide",
    ("NIH", "azide"): "reactive: azide",
    ("NIH", "azo_amino"): "reactive: triazene, an alkylating agent",
    ("NIH", "azo_aryl"): "unstable: azo, cleaved to anilines",
    ("BRENK", "diazo_group"): "unstable: azo or diazo",
    ("NIH", "hydrazine"): "mutagen: hydrazine",
    ("BRENK", "hydrazine"): "mutagen: hydrazine",
    ("BRENK", "acyl_hydrazine"): "mutagen: acyl hydrazine, releases hydrazine",
    ("NIH", "alpha_halo_carbonyl"): "reactive: alpha-halo carbonyl, an alkylating agent",
    ("NIH", "primary_halide_sulfate"): "reactive: primary alkyl halide or sulfonate, an alkylating agent",
    ("NIH", "secondary_halide_sulfate"): "reactive: secondary alkyl halide or sulfonate, an alkylating agent",
    ("BRENK", "Sulfonic_acid_1"): "reactive: sulfonate ester, an alkylating agent",
    ("BRENK", "Three-membered_heterocycle"): "reactive: epoxide, aziridine or thiirane, an alkylating agent",
    ("NIH", "CH2_S#O_3_ring"): "reactive: epoxide or thiirane, an alkylating agent",
    ("NIH", "thioester"): "reactive: thioester, an acylating agent",
    ("NIH", "aldehyde"): "reactive: aldehyde",
    ("BRENK", "aldehyde"): "reactive: aldehyde",
    ("BRENK", "thiol_1"): "reactive: thiolate",
    ("BRENK", "thiol_2"): "reactive: thiol",
    ("BRENK", "disulphide"): "reactive: disulfide",
    ("BRENK", "chinone_1"): "reactive: quinone, a redox cycler",
}
BLOCK = 5000
VERIFY = 20000  # molecules of each set on which the SMARTS are checked against RDKit's entries
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
# Where alerts.tsv and environments.txt.gz are read (--relabel) and written: data/rules, or $NFBO_GEN_OUT (the
# test that the committed alerts.tsv is the script's, chem/rules).
OUT = os.environ.get("NFBO_GEN_OUT") or os.path.join(ROOT, "data", "rules")
SETS = [("zinc250k", "data/zinc250k/zinc.txt.gz"), ("guacamol10k", "data/guacamol/guacamol_10k.smiles")]


def entry_pattern(e):
    """The SMARTS and minimum count of a catalogue entry, from its serialised form (RDKit's Python has no
    accessor): a boost text archive holding the pattern as a molecule pickle, then the minimum count."""
    b = e.Serialize()
    i = b.index(b"\xef\xbe\xad\xde")
    n = int(b[:i].split()[-1])
    q = Chem.Mol(b[i:i + n])
    rest = b[i + n:].split()
    return Chem.MolToSmarts(q), int(rest[0]), int(rest[1]), q


def alerts():
    out = []
    for cat in CATALOGUES:
        p = FC.FilterCatalogParams()
        p.AddCatalog(getattr(FC.FilterCatalogParams.FilterCatalogs, cat))
        c = FC.FilterCatalog(p)
        for i in range(c.GetNumEntries()):
            e = c.GetEntryWithIdx(i)
            smarts, lo, hi, q = entry_pattern(e)
            q2 = Chem.MolFromSmarts(smarts)
            if q2 is None:
                sys.exit("%s %s: SMARTS %s does not parse back" % (cat, e.GetDescription(), smarts))
            out.append({"catalogue": cat, "name": e.GetDescription(), "smarts": smarts, "min": lo, "max": hi,
                        "entry": e, "query": q2})
    for name, smarts in OWN:
        q = Chem.MolFromSmarts(smarts)
        if q is None:
            sys.exit("NFBO %s: SMARTS %s does not parse" % (name, smarts))
        out.append({"catalogue": "NFBO", "name": name, "smarts": smarts, "min": 1, "max": 4294967295,
                    "entry": None, "query": q})
    return out


def matches(a, mol):
    if a["min"] <= 1 and a["max"] == 4294967295:
        return mol.HasSubstructMatch(a["query"])
    n = len(mol.GetSubstructMatches(a["query"], uniquify=True, maxMatches=max(a["min"], 1) + 1000))
    return a["min"] <= n <= a["max"]


def read_set(path):
    f = gzip.open(os.path.join(ROOT, path), "rt") if path.endswith(".gz") else open(os.path.join(ROOT, path))
    with f:
        return [line.split()[0] for line in f if line.strip()]


def count_block(al, smiles, verify):
    hits = [0] * len(al)
    env = {}
    bad = 0
    for s in smiles:
        mol = Chem.MolFromSmiles(s)
        if mol is None:
            bad += 1
            continue
        for k, a in enumerate(al):
            m = matches(a, mol)
            if verify and a["entry"] is not None and m != a["entry"].HasFilterMatch(mol):
                sys.exit("%s %s: SMARTS %s (min %d) and RDKit's entry disagree on %s" %
                         (a["catalogue"], a["name"], a["smarts"], a["min"], s))
            if m:
                hits[k] += 1
        for ident in rdMolDescriptors.GetMorganFingerprint(mol, 1).GetNonzeroElements():
            env[ident] = env.get(ident, 0) + 1
    return {"n": len(smiles) - bad, "unparsed": bad, "hits": hits, "env": {str(k): v for k, v in env.items()}}


def relabel(al):
    """The counts of the present alerts.tsv, for the same alerts in the same order: REJECT or THRESHOLD changed,
    not the catalogues or the data, so nothing need be counted again."""
    path = os.path.join(OUT, "alerts.tsv")
    with open(path) as f:
        lines = f.read().splitlines()
    sizes = re.search(r"ZINC250k \((\d+) molecules\) and GuacaMol 10k \((\d+) molecules\)", "\n".join(lines[:3]))
    if sizes is None:
        sys.exit("%s: no set sizes in its first lines" % path)
    rows = [l.split("\t") for l in lines if not l.startswith("#")]
    head = rows[0]
    col = {h: i for i, h in enumerate(head)}
    rows = rows[1:]
    if len(rows) != len(al):
        sys.exit("%s: %d alerts, the catalogues now %d: count again" % (path, len(rows), len(al)))
    for r, a in zip(rows, al):
        if [r[col["catalogue"]], r[col["name"]], r[col["smarts"]], r[col["min_count"]]] != \
                [a["catalogue"], a["name"], a["smarts"], str(a["min"])]:
            sys.exit("%s: row %s %s is not the catalogue's now: count again" % (path, r[0], r[1]))
    return {"zinc250k": {"n": int(sizes.group(1)), "hits": [int(r[col["zinc250k"]]) for r in rows]},
            "guacamol10k": {"n": int(sizes.group(2)), "hits": [int(r[col["guacamol10k"]]) for r in rows]}}


def main():
    RDLogger.DisableLog("rdApp.*")
    if sys.argv[1:] == ["--relabel"]:
        al = alerts()
        write(al, relabel(al))
        return
    work = os.environ.get("NFBO_GEN_DIR", os.path.join(ROOT, ".gen-rules"))
    os.makedirs(work, exist_ok=True)
    al = alerts()
    print("%d alerts (%s, NFBO), RDKit %s" % (len(al), ", ".join(CATALOGUES), rdBase.rdkitVersion), flush=True)
    totals = {}
    # NFBO_GEN_REVERSE=1 counts the blocks from the last: a second process so started shares the work with the
    # first (a block both count is written twice, alike).
    reverse = os.environ.get("NFBO_GEN_REVERSE") == "1"
    for name, path in (SETS[::-1] if reverse else SETS):
        smiles = read_set(path)
        t = {"n": 0, "unparsed": 0, "hits": [0] * len(al), "env": {}}
        starts = range(0, len(smiles), BLOCK)
        for lo in (starts[::-1] if reverse else starts):
            f = os.path.join(work, "%s-%06d.json" % (name, lo))
            if os.path.exists(f):
                with open(f) as fh:
                    r = json.load(fh)
            else:
                start = time.time()
                r = count_block(al, smiles[lo:lo + BLOCK], lo < VERIFY)
                r["alerts"] = len(al)
                with open(f + ".tmp", "w") as fh:
                    json.dump(r, fh)
                os.replace(f + ".tmp", f)
                print("%s %d-%d of %d: %.0f s" % (name, lo, lo + BLOCK, len(smiles), time.time() - start), flush=True)
            if r["alerts"] != len(al):
                sys.exit("%s: counted with %d alerts, now %d: remove %s" % (f, r["alerts"], len(al), work))
            t["n"] += r["n"]
            t["unparsed"] += r["unparsed"]
            t["hits"] = [x + y for x, y in zip(t["hits"], r["hits"])]
            for k, v in r["env"].items():
                t["env"][k] = t["env"].get(k, 0) + v
        totals[name] = t
    write(al, totals)


def write(al, totals):
    z, g = totals["zinc250k"], totals["guacamol10k"]
    out = OUT
    os.makedirs(out, exist_ok=True)
    missing = set(REJECT) - {(a["catalogue"], a["name"]) for a in al}
    if missing:
        sys.exit("REJECT names alerts no catalogue holds: %s" % sorted(missing))
    kept = rare = 0
    rows = []
    for k, a in enumerate(al):
        fz, fg = z["hits"][k] / z["n"], g["hits"][k] / g["n"]
        reason = "rare" if fz < THRESHOLD and fg < THRESHOLD else REJECT.get((a["catalogue"], a["name"]), "")
        kept += reason != ""
        rare += reason == "rare"
        rows.append("\t".join([a["catalogue"], a["name"], a["smarts"], str(a["min"]), str(z["hits"][k]),
                               "%.6f" % fz, str(g["hits"][k]), "%.6f" % fg, "yes" if reason else "no", reason]))
    with open(os.path.join(out, "alerts.tsv"), "w") as f:
        f.write("# Structural alerts of RDKit %s's FilterCatalog (%s) and nfbo's own (NFBO: OWN in\n"
                "# scripts/gen-rules.py), counted in ZINC250k (%d molecules) and GuacaMol 10k (%d molecules) on %s.\n"
                % (rdBase.rdkitVersion, ", ".join(CATALOGUES), z["n"], g["n"], datetime.date.today().isoformat()))
        f.write("# default=yes: the %d alerts of the default rules' \"alerts\" (chem/rules): %d below %.1f %% of the\n"
                "# molecules in both sets (reason \"rare\"), and %d more a chemist rejects on sight (REJECT in the\n"
                "# script; reason: why).\n" % (kept, rare, 100 * THRESHOLD, kept - rare))
        f.write("# min_count: the alert needs at least that many matches. Data: see data/README.md.\n")
        f.write("catalogue\tname\tsmarts\tmin_count\tzinc250k\tzinc250k_frequency\tguacamol10k\t"
                "guacamol10k_frequency\tdefault\treason\n")
        f.write("\n".join(rows) + "\n")
    if "env" not in z:  # relabelled: the environments are as counted
        print("kept %d of %d alerts (%d rare)" % (kept, len(al), rare), flush=True)
        return
    env = {}
    for t in (z, g):
        for k, v in t["env"].items():
            env[int(k)] = env.get(int(k), 0) + v
    with gzip.GzipFile(os.path.join(out, "environments.txt.gz"), "wb", mtime=0) as f:
        f.write(("# Morgan radius-1 atom environments (RDKit %s, unhashed identifiers of radius 0 and 1, no\n"
                 "# chirality) held by ZINC250k and GuacaMol 10k: identifier, molecules holding it.\n"
                 "# %d environments; scripts/gen-rules.py.\n" % (rdBase.rdkitVersion, len(env))).encode())
        for k in sorted(env):
            f.write(("%d %d\n" % (k, env[k])).encode())
    # How strict the environments are on molecules they were not taken from: GuacaMol's environments
    # unseen in ZINC250k alone.
    print("kept %d of %d alerts (%d rare); %d environments (ZINC250k %d, GuacaMol 10k %d)" %
          (kept, len(al), rare, len(env), len(z["env"]), len(g["env"])), flush=True)


if __name__ == "__main__":
    main()
