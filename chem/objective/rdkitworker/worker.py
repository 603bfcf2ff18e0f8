"""nfbo RDKit worker: GuacaMol, PMO (TDC) and LOL-BO objectives over JSON lines.

The Go package github.com/nfbo/nfbo/chem/objective embeds this file and runs
it with /usr/bin/python3, the interpreter that sees Debian's python3-rdkit.
It reads one JSON request per line on stdin and writes exactly one JSON
response per request on stdout; everything else (RDKit messages, Python
warnings, tracebacks) goes to stderr. docs/objective-protocol.md describes
the protocol.

Every task is written here from its published definition, importing nothing
but RDKit, numpy and the standard library:

  * GuacaMol v2 goal-directed objectives: BenevolentAI/guacamol @ 60ebe1f
    (v0.5.5), standard_benchmarks.py, scoring_function.py, score_modifier.py,
    common_scoring_functions.py, utils/{descriptors,fingerprints,chemistry}.py.
  * PMO oracles: mims-harvard/TDC tdc/chem_utils/oracle/oracle.py, with the
    current (non-"_prev") isomer scoring and scipy's gmean.
  * LOL-BO penalised logP: nataliemaus/lolbo lolbo/utils/mol_utils/mol_utils.py,
    with networkx 2.x cycle_basis re-implemented in cycle_basis_max below.

The numeric operations (numpy array shapes, reduction order, np.power,
np.exp, prod()**(1/n), exp(mean(log))) mirror the reference code so that
scores agree to the last bit, not just to rounding.
"""

import json
import logging
import math
import os
import re
import sys
import time
import traceback

# The protocol owns the original stdout. File descriptor 1 is pointed at
# stderr before RDKit is imported, so that a stray print or C++ message can
# never corrupt the response stream.
_PROTO_FD = os.dup(1)
os.dup2(2, 1)
sys.stdout = sys.stderr
_OUT = os.fdopen(_PROTO_FD, "w", encoding="utf-8", newline="\n")

PROTOCOL_VERSION = 1

try:
    import numpy as np
    import rdkit
    from rdkit import Chem, DataStructs, RDConfig, rdBase
    from rdkit.Chem import AllChem, Crippen, Descriptors, QED, rdMolDescriptors, rdmolops
    from rdkit.Chem.Pharm2D import Gobbi_Pharm2D, Generate
except Exception as exc:  # reported as a protocol error so Go can name the fix
    _IMPORT_ERROR = "%s: %s" % (type(exc).__name__, exc)
else:
    _IMPORT_ERROR = None


# ---------------------------------------------------------------------------
# RDKit messages: captured per molecule so a parse failure can be reported
# beside its score instead of being printed.

class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.DEBUG)
        self.messages = []

    def emit(self, record):
        try:
            self.messages.append(record.getMessage().strip())
        except Exception:
            pass


_CAPTURE = _Capture()


def _setup_rdkit_logging():
    rdBase.LogToPythonLogger()
    logger = logging.getLogger("rdkit")
    logger.handlers = [_CAPTURE]
    logger.propagate = False
    logger.setLevel(logging.DEBUG)


def _take_messages():
    msgs = [m for m in _CAPTURE.messages if m]
    _CAPTURE.messages = []
    # RDKit prefixes each line with a timestamp like "[14:02:03] ".
    out = []
    for m in msgs:
        for line in m.splitlines():
            line = re.sub(r"^\[\d\d:\d\d:\d\d\]\s*", "", line).strip()
            if line:
                out.append(line)
    return "; ".join(out)


class ScoreError(Exception):
    """A molecule that scores 0 for a stated reason."""


def _truncate(s, n=200):
    return s if len(s) <= n else s[:n] + "..."


# RDKit's SMILES parsing grows roughly cubically with chain length (a
# 2,000-atom chain takes 11 s, 10,000 atoms many minutes), so absurdly long
# strings are refused up front rather than hanging the worker. No GuacaMol,
# PMO or NF-BO molecule comes near the default; --max-smiles-len changes it.
MAX_SMILES_LEN = 1000


def parse_checked(smiles):
    """Chem.MolFromSmiles, raising ScoreError with RDKit's reason on failure."""
    if smiles is None or len(smiles) == 0:
        raise ScoreError("empty SMILES")
    if MAX_SMILES_LEN > 0 and len(smiles) > MAX_SMILES_LEN:
        raise ScoreError("SMILES has %d characters, more than the worker's limit of %d" % (len(smiles), MAX_SMILES_LEN))
    _take_messages()
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        why = _take_messages()
        raise ScoreError("invalid SMILES" + (": " + _truncate(why) if why else ""))
    _take_messages()
    return mol


# ---------------------------------------------------------------------------
# Score modifiers (guacamol/score_modifier.py; TDC copies them verbatim).

def identity_modifier(x):
    # LinearModifier(slope=1.0), the default modifier of every scoring function.
    return 1.0 * x


class Gaussian:
    def __init__(self, mu, sigma):
        self.mu = mu
        self.sigma = sigma

    def __call__(self, x):
        return np.exp(-0.5 * np.power((x - self.mu) / self.sigma, 2.))


class MinMaxGaussian:
    def __init__(self, mu, sigma, minimize):
        self.mu = mu
        self.minimize = minimize
        self.full = Gaussian(mu, sigma)

    def __call__(self, x):
        if self.minimize:
            x = np.maximum(x, self.mu)
        else:
            x = np.minimum(x, self.mu)
        return self.full(x)


def MinGaussian(mu, sigma):
    return MinMaxGaussian(mu, sigma, True)


def MaxGaussian(mu, sigma):
    return MinMaxGaussian(mu, sigma, False)


class Clipped:
    def __init__(self, upper_x, lower_x=0.0, high_score=1.0, low_score=0.0):
        self.low = low_score
        self.high = high_score
        self.slope = (high_score - low_score) / (upper_x - lower_x)
        self.intercept = high_score - self.slope * upper_x

    def __call__(self, x):
        y = self.slope * x + self.intercept
        return np.clip(y, self.low, self.high)


# ---------------------------------------------------------------------------
# Fingerprints and descriptors (guacamol/utils/fingerprints.py, descriptors.py).

def fp_ECFP4(mol):
    return AllChem.GetMorganFingerprint(mol, 2)


def fp_ECFP6(mol):
    return AllChem.GetMorganFingerprint(mol, 3)


def fp_FCFP4(mol):
    return AllChem.GetMorganFingerprint(mol, 2, useFeatures=True)


def fp_AP(mol):
    return AllChem.GetAtomPairFingerprint(mol, maxLength=10)


def fp_PHCO(mol):
    return Generate.Gen2DFingerprint(mol, Gobbi_Pharm2D.factory)


FINGERPRINTS = {"ECFP4": fp_ECFP4, "ECFP6": fp_ECFP6, "FCFP4": fp_FCFP4, "AP": fp_AP, "PHCO": fp_PHCO}


def logP(mol):
    return Descriptors.MolLogP(mol)


def tpsa(mol):
    return Descriptors.TPSA(mol)


def bertz(mol):
    return Descriptors.BertzCT(mol)


def num_rings(mol):
    return rdMolDescriptors.CalcNumRings(mol)


def num_aromatic_rings(mol):
    return rdMolDescriptors.CalcNumAromaticRings(mol)


def num_atoms(mol):
    return Chem.AddHs(mol).GetNumAtoms()


class AtomCounter:
    def __init__(self, element):
        self.element = element

    def __call__(self, mol):
        if self.element == "H":
            mol = Chem.AddHs(mol)
        return sum(1 for a in mol.GetAtoms() if a.GetSymbol() == self.element)


def parse_molecular_formula(formula):
    out = []
    for elem, count in re.findall(r"([A-Z][a-z]*)(\d*)", formula):
        out.append((elem, 1 if not count else int(count)))
    return out


# ---------------------------------------------------------------------------
# Per-molecule context: one SMILES string, parsed at most once per request
# no matter how many sub-scores need it. Every guacamol sub-score re-parses
# the SMILES; the parse is deterministic, so sharing it changes no value.

class Molecule:
    __slots__ = ("smiles", "_guac", "_guac_done", "_fps", "_check")

    def __init__(self, smiles):
        self.smiles = smiles
        self._guac = None
        self._guac_done = False
        self._fps = {}
        self._check = None

    def check(self):
        """parse_checked, memoised: raises the same ScoreError every time."""
        if self._check is None:
            try:
                parse_checked(self.smiles)
                self._check = ""
            except ScoreError as e:
                self._check = str(e)
        if self._check:
            raise ScoreError(self._check)

    def guac_mol(self):
        """guacamol.utils.chemistry.smiles_to_rdkit_mol, memoised; None if invalid."""
        if not self._guac_done:
            self._guac_done = True
            if MAX_SMILES_LEN > 0 and len(self.smiles) > MAX_SMILES_LEN:
                return None
            mol = Chem.MolFromSmiles(self.smiles)
            if mol is not None:
                try:
                    Chem.SanitizeMol(mol)
                except ValueError:
                    mol = None
            self._guac = mol
        return self._guac

    def fingerprint(self, kind):
        fp = self._fps.get(kind)
        if fp is None:
            mol = self.guac_mol()
            if mol is None:
                raise ScoreError("invalid molecule")
            fp = FINGERPRINTS[kind](mol)
            self._fps[kind] = fp
        return fp


def _target_mol(smiles):
    mol = Chem.MolFromSmiles(smiles)
    Chem.SanitizeMol(mol)
    return mol


# ---------------------------------------------------------------------------
# GuacaMol scoring functions (guacamol/scoring_function.py and
# common_scoring_functions.py). score(m) returns the modified score, or the
# corrupt score -1.0 when the molecule is invalid or scoring raises, exactly
# as MoleculewiseScoringFunction.score does.

CORRUPT = -1.0


class RdkitPart:
    """RdkitScoringFunction: a descriptor of the molecule through a modifier."""

    def __init__(self, descriptor, modifier=identity_modifier):
        self.descriptor = descriptor
        self.modifier = modifier

    def score(self, m):
        try:
            mol = m.guac_mol()
            if mol is None:
                return CORRUPT
            return self.modifier(self.descriptor(mol))
        except Exception:
            return CORRUPT


class TanimotoPart:
    """TanimotoScoringFunction: count-fingerprint Tanimoto to a target."""

    def __init__(self, target, fp_type, modifier=identity_modifier):
        self.fp_type = fp_type
        self.ref_fp = FINGERPRINTS[fp_type](_target_mol(target))
        self.modifier = modifier

    def score(self, m):
        try:
            if m.guac_mol() is None:
                return CORRUPT
            return self.modifier(DataStructs.TanimotoSimilarity(m.fingerprint(self.fp_type), self.ref_fp))
        except Exception:
            return CORRUPT


class SmartsPart:
    """SMARTSScoringFunction: 1 if the pattern is present (or absent when inverse)."""

    def __init__(self, smarts, inverse=False):
        self.target = Chem.MolFromSmarts(smarts)
        self.inverse = inverse

    def score(self, m):
        try:
            mol = m.guac_mol()
            if mol is None:
                return CORRUPT
            found = len(mol.GetSubstructMatches(self.target)) > 0
            value = (0.0 if self.inverse else 1.0) if found else (1.0 if self.inverse else 0.0)
            return identity_modifier(value)
        except Exception:
            return CORRUPT


def guac_geometric_mean(values):
    a = np.array(values)
    return a.prod() ** (1.0 / len(a))


class GeometricMean:
    """GeometricMeanScoringFunction."""

    def __init__(self, parts):
        self.parts = parts

    def score(self, m):
        try:
            partial = [p.score(m) for p in self.parts]
            if CORRUPT in partial:
                raw = CORRUPT
            else:
                raw = guac_geometric_mean(partial)
            return identity_modifier(raw)
        except Exception:
            return CORRUPT


class ArithmeticMean:
    """ArithmeticMeanScoringFunction (a BatchScoringFunction scored one at a time)."""

    def __init__(self, parts):
        self.parts = parts
        self.weights = np.ones(len(parts))

    def score(self, m):
        scores = []
        for part, weight in zip(self.parts, self.weights):
            scores.append(weight * np.array([part.score(m)]))
        raw = list(np.array(scores).sum(axis=0) / np.sum(self.weights))[0]
        if raw is None:
            return CORRUPT
        return identity_modifier(raw)


class Isomer:
    """IsomerScoringFunction with the (v2 default) geometric mean."""

    def __init__(self, formula):
        occ = parse_molecular_formula(formula)
        total = sum(n for _, n in occ)
        self.parts = [RdkitPart(AtomCounter(e), Gaussian(mu=n, sigma=1.0)) for e, n in occ]
        self.parts.append(RdkitPart(num_atoms, Gaussian(mu=total, sigma=2.0)))

    def score(self, m):
        try:
            scores = [p.score(m) for p in self.parts]
            raw = CORRUPT if CORRUPT in scores else guac_geometric_mean(scores)
            return identity_modifier(raw)
        except Exception:
            return CORRUPT


def guacamol_objectives():
    """The 20 goal-directed objectives of goal_directed_suite_v2, by benchmark name.

    Returns (name, objective, top-k specification) triples in suite order.
    """
    clipped = Clipped
    sitagliptin = Chem.MolFromSmiles("Fc1cc(c(F)cc1F)CC(N)CC(=O)N3Cc2nnc(n2CC3)C(F)(F)F")
    sitagliptin2 = Chem.MolFromSmiles("NC(CC(=O)N1CCn2c(nnc2C(F)(F)F)C1)Cc1cc(F)c(F)cc1F")
    deco_target = "CCCOc1cc2ncnc(Nc3ccc4ncsc4c3)c2cc1S(=O)(=O)C(C)(C)C"
    osimertinib = "COc1cc(N(C)CCN(C)C)c(NC(=O)C=C)cc1Nc2nccc(n2)c3cn(C)c4ccccc34"
    fexofenadine = "CC(C)(C(=O)O)c1ccc(cc1)C(O)CCCN2CCC(CC2)C(O)(c3ccccc3)c4ccccc4"
    ranolazine = "COc1ccccc1OCC(O)CN2CCN(CC(=O)Nc3c(C)cccc3C)CC2"
    spec = [1, 10, 100]
    return [
        ("Celecoxib rediscovery",
         TanimotoPart("CC1=CC=C(C=C1)C1=CC(=NN1C1=CC=C(C=C1)S(N)(=O)=O)C(F)(F)F", "ECFP4", clipped(1.0)), [1]),
        ("Troglitazone rediscovery",
         TanimotoPart("Cc1c(C)c2OC(C)(COc3ccc(CC4SC(=O)NC4=O)cc3)CCc2c(C)c1O", "ECFP4", clipped(1.0)), [1]),
        ("Thiothixene rediscovery",
         TanimotoPart("CN(C)S(=O)(=O)c1ccc2Sc3ccccc3C(=CCCN4CCN(C)CC4)c2c1", "ECFP4", clipped(1.0)), [1]),
        ("Aripiprazole similarity",
         TanimotoPart("Clc4cccc(N3CCN(CCCCOc2ccc1c(NC(=O)CC1)c2)CC3)c4Cl", "ECFP4", clipped(0.75)), spec),
        ("Albuterol similarity", TanimotoPart("CC(C)(C)NCC(O)c1ccc(O)c(CO)c1", "FCFP4", clipped(0.75)), spec),
        ("Mestranol similarity",
         TanimotoPart("COc1ccc2[C@H]3CC[C@@]4(C)[C@@H](CC[C@@]4(O)C#C)[C@@H]3CCc2c1", "AP", clipped(0.75)), spec),
        ("C11H24", Isomer("C11H24"), [159]),
        ("C9H10N2O2PF2Cl", Isomer("C9H10N2O2PF2Cl"), [250]),
        ("Median molecules 1", GeometricMean([
            TanimotoPart("CC(C)C1CCC(C)CC1O", "ECFP4"),
            TanimotoPart("CC1(C)C2CCC1(C)C(=O)C2", "ECFP4")]), spec),
        ("Median molecules 2", GeometricMean([
            TanimotoPart("O=C1N(CC(N2C1CC3=C(C2C4=CC5=C(OCO5)C=C4)NC6=C3C=CC=C6)=O)C", "ECFP6"),
            TanimotoPart("CCCC1=NN(C2=C1N=C(NC2=O)C3=C(C=CC(=C3)S(=O)(=O)N4CCN(CC4)C)OCC)C", "ECFP6")]), spec),
        ("Osimertinib MPO", GeometricMean([
            TanimotoPart(osimertinib, "FCFP4", clipped(0.8)),
            TanimotoPart(osimertinib, "ECFP6", MinGaussian(0.85, 0.1)),
            RdkitPart(tpsa, MaxGaussian(100, 10)),
            RdkitPart(logP, MinGaussian(1, 1))]), spec),
        ("Fexofenadine MPO", GeometricMean([
            TanimotoPart(fexofenadine, "AP", clipped(0.8)),
            RdkitPart(tpsa, MaxGaussian(90, 10)),
            RdkitPart(logP, MinGaussian(4, 1))]), spec),
        ("Ranolazine MPO", GeometricMean([
            TanimotoPart(ranolazine, "AP", clipped(0.7)),
            RdkitPart(logP, MaxGaussian(7, 1)),
            RdkitPart(AtomCounter("F"), Gaussian(1, 1.0)),
            RdkitPart(tpsa, MaxGaussian(95, 20))]), spec),
        ("Perindopril MPO", GeometricMean([
            TanimotoPart("O=C(OCC)C(NC(C(=O)N1C(C(=O)O)CC2CCCCC12)C)CCC", "ECFP4"),
            RdkitPart(num_aromatic_rings, Gaussian(2, 0.5))]), spec),
        ("Amlodipine MPO", GeometricMean([
            TanimotoPart(r"Clc1ccccc1C2C(=C(/N/C(=C2/C(=O)OCC)COCCN)C)\C(=O)OC", "ECFP4"),
            RdkitPart(num_rings, Gaussian(3, 0.5))]), spec),
        ("Sitagliptin MPO", GeometricMean([
            TanimotoPart("Fc1cc(c(F)cc1F)CC(N)CC(=O)N3Cc2nnc(n2CC3)C(F)(F)F", "ECFP4", Gaussian(0, 0.1)),
            RdkitPart(logP, Gaussian(logP(sitagliptin), 0.2)),
            RdkitPart(tpsa, Gaussian(tpsa(sitagliptin), 5)),
            Isomer("C16H15F6N5O")]), spec),
        ("Zaleplon MPO", GeometricMean([
            TanimotoPart("O=C(C)N(CC)C1=CC=CC(C2=CC=NC3=C(C=NN23)C#N)=C1", "ECFP4"),
            Isomer("C19H17N3O2")]), spec),
        ("Valsartan SMARTS", GeometricMean([
            SmartsPart("CN(C=O)Cc1ccc(c2ccccc2)cc1"),
            RdkitPart(logP, Gaussian(logP(sitagliptin2), 0.2)),
            RdkitPart(tpsa, Gaussian(tpsa(sitagliptin2), 5)),
            RdkitPart(bertz, Gaussian(bertz(sitagliptin2), 30))]), spec),
        ("Deco Hop", ArithmeticMean([
            TanimotoPart(deco_target, "PHCO", clipped(0.85)),
            SmartsPart("CS([#6])(=O)=O", inverse=True),
            SmartsPart("[#7]-c1ccc2ncsc2c1", inverse=True),
            SmartsPart("[#7]-c1n[c;h1]nc2[c;h1]c(-[#8])[c;h0][c;h1]c12", inverse=False)]), spec),
        ("Scaffold Hop", ArithmeticMean([
            TanimotoPart(deco_target, "PHCO", clipped(0.75)),
            SmartsPart("[#6]-[#6]-[#6]-[#8]-[#6]~[#6]~[#6]~[#6]~[#6]-[#7]-c1ccc2ncsc2c1", inverse=False),
            SmartsPart("[#7]-c1n[c;h1]nc2[c;h1]c(-[#8])[c;h0][c;h1]c12", inverse=True)]), spec),
    ]


# NF-BO's short ids (objective/guacamol/utils/mol_utils/mol_utils.py).
NFBO_IDS = {
    "med1": "Median molecules 1", "med2": "Median molecules 2", "pdop": "Perindopril MPO",
    "osmb": "Osimertinib MPO", "adip": "Amlodipine MPO", "siga": "Sitagliptin MPO",
    "zale": "Zaleplon MPO", "valt": "Valsartan SMARTS", "dhop": "Deco Hop", "shop": "Scaffold Hop",
    "rano": "Ranolazine MPO", "fexo": "Fexofenadine MPO",
}


def nfbo_guacamol_score(objective, m):
    """NF-BO/LOL-BO wrapper (smile_to_guacamole_score): invalid, corrupt,
    negative and non-finite all become 0 with a reason."""
    m.check()  # empty or unparsable: ScoreError
    score = objective.score(m)
    if score is None:
        raise ScoreError("no score")
    score = float(score)
    if not math.isfinite(score):
        raise ScoreError("non-finite score %r" % score)
    if score < 0:
        if score == CORRUPT:
            why = "RDKit could not sanitize or score the molecule" if m.guac_mol() is None else "scoring failed"
            raise ScoreError("corrupt score -1 (%s)" % why)
        raise ScoreError("negative score %r" % score)
    return score


# ---------------------------------------------------------------------------
# PMO oracles as TDC defines them (tdc/chem_utils/oracle/oracle.py).

def tdc_mol(smiles):
    """TDC's smiles_to_rdkit_mol (same as guacamol's)."""
    mol = Chem.MolFromSmiles(smiles)
    if mol is not None:
        try:
            Chem.SanitizeMol(mol)
        except ValueError:
            return None
    return mol


def gmean(values):
    """scipy.stats.gmean on a list: exp(mean(log(array)))."""
    with np.errstate(divide="ignore", invalid="ignore"):
        log_a = np.log(np.array(values))
        return np.exp(np.average(log_a, axis=0))


def tdc_mean(values):
    return np.mean(values)


class TDCIsomer:
    """TDC Isomer_scoring (the fixed version, not Isomer_scoring_prev)."""

    def __init__(self, formula):
        occ = parse_molecular_formula(formula)
        total = sum(c for _, c in occ)
        self.total_modifier = Gaussian(mu=total, sigma=2.0)
        self.counters = [(AtomCounter(a), Gaussian(mu=c, sigma=1.0)) for a, c in occ]

    def __call__(self, smiles):
        mol0 = Chem.MolFromSmiles(smiles)
        canon = Chem.MolToSmiles(mol0, isomericSmiles=True)
        with_h = Chem.MolToSmiles(Chem.AddHs(Chem.MolFromSmiles(canon)))
        molecule = tdc_mol(with_h)
        scores = [mod(counter(molecule)) for counter, mod in self.counters]
        formula = rdMolDescriptors.CalcMolFormula(Chem.MolFromSmiles(with_h))
        total = sum(c for _, c in parse_molecular_formula(formula))
        scores.append(self.total_modifier(total))
        return gmean(scores)


class TDCOracles:
    """The 20 PMO oracles that need only RDKit, as callables on a SMILES string."""

    def __init__(self):
        def fp(smiles, kind):
            return FINGERPRINTS[kind](tdc_mol(smiles))

        self.fp = fp
        sim_mod = Clipped(0.75)
        targets = {
            "celecoxib": "CC1=CC=C(C=C1)C1=CC(=NN1C1=CC=C(C=C1)S(N)(=O)=O)C(F)(F)F",
            "troglitazone": "Cc1c(C)c2OC(C)(COc3ccc(CC4SC(=O)NC4=O)cc3)CCc2c(C)c1O",
            "thiothixene": "CN(C)S(=O)(=O)c1ccc2Sc3ccccc3C(=CCCN4CCN(C)CC4)c2c1",
            "albuterol": "CC(C)(C)NCC(O)c1ccc(O)c(CO)c1",
            "mestranol": "COc1ccc2[C@H]3CC[C@@]4(C)[C@@H](CC[C@@]4(O)C#C)[C@@H]3CCc2c1",
        }
        self.ref = {
            "celecoxib": fp(targets["celecoxib"], "ECFP4"),
            "troglitazone": fp(targets["troglitazone"], "ECFP4"),
            "thiothixene": fp(targets["thiothixene"], "ECFP4"),
            "albuterol": fp(targets["albuterol"], "FCFP4"),
            "mestranol": fp(targets["mestranol"], "AP"),
            "camphor": fp("CC1(C)C2CCC1(C)C(=O)C2", "ECFP4"),
            "menthol": fp("CC(C)C1CCC(C)CC1O", "ECFP4"),
            "tadalafil": fp("O=C1N(CC(N2C1CC3=C(C2C4=CC5=C(OCO5)C=C4)NC6=C3C=CC=C6)=O)C", "ECFP6"),
            "sildenafil": fp("CCCC1=NN(C2=C1N=C(NC2=O)C3=C(C=CC(=C3)S(=O)(=O)N4CCN(CC4)C)OCC)C", "ECFP6"),
            "osimertinib_fcfp4": fp("COc1cc(N(C)CCN(C)C)c(NC(=O)C=C)cc1Nc2nccc(n2)c3cn(C)c4ccccc34", "FCFP4"),
            "osimertinib_ecfp6": fp("COc1cc(N(C)CCN(C)C)c(NC(=O)C=C)cc1Nc2nccc(n2)c3cn(C)c4ccccc34", "ECFP6"),
            "fexofenadine": fp("CC(C)(C(=O)O)c1ccc(cc1)C(O)CCCN2CCC(CC2)C(O)(c3ccccc3)c4ccccc4", "AP"),
            "ranolazine": fp("COc1ccccc1OCC(O)CN2CCN(CC(=O)Nc3c(C)cccc3C)CC2", "AP"),
            "perindopril": fp("O=C(OCC)C(NC(C(=O)N1C(C(=O)O)CC2CCCCC12)C)CCC", "ECFP4"),
            "amlodipine": fp(r"Clc1ccccc1C2C(=C(/N/C(=C2/C(=O)OCC)COCCN)C)\C(=O)OC", "ECFP4"),
            "zaleplon": fp("O=C(C)N(CC)C1=CC=CC(C2=CC=NC3=C(C=NN23)C#N)=C1", "ECFP4"),
            "sitagliptin": fp("Fc1cc(c(F)cc1F)CC(N)CC(=O)N3Cc2nnc(n2CC3)C(F)(F)F", "ECFP4"),
            "pharmacophore": fp_PHCO(tdc_mol("CCCOc1cc2ncnc(Nc3ccc4ncsc4c3)c2cc1S(=O)(=O)C(C)(C)C")),
        }
        sita = Chem.MolFromSmiles("Fc1cc(c(F)cc1F)CC(N)CC(=O)N3Cc2nnc(n2CC3)C(F)(F)F")
        self.sita_logp = Gaussian(mu=Descriptors.MolLogP(sita), sigma=0.2)
        self.sita_tpsa = Gaussian(mu=Descriptors.TPSA(sita), sigma=5)
        self.sita_sim = Gaussian(mu=0, sigma=0.1)
        vals = Chem.MolFromSmiles("NC(CC(=O)N1CCn2c(nnc2C(F)(F)F)C1)Cc1cc(F)c(F)cc1F")
        self.val_smarts = Chem.MolFromSmarts("CN(C=O)Cc1ccc(c2ccccc2)cc1")
        self.val_logp = Gaussian(mu=Descriptors.MolLogP(vals), sigma=0.2)
        self.val_tpsa = Gaussian(mu=Descriptors.TPSA(vals), sigma=5)
        self.val_bertz = Gaussian(mu=Descriptors.BertzCT(vals), sigma=30)
        self.deco1 = Chem.MolFromSmarts("CS([#6])(=O)=O")
        self.deco2 = Chem.MolFromSmarts("[#7]-c1ccc2ncsc2c1")
        self.scaffold = Chem.MolFromSmarts("[#7]-c1n[c;h1]nc2[c;h1]c(-[#8])[c;h0][c;h1]c12")
        self.shop_deco = Chem.MolFromSmarts("[#6]-[#6]-[#6]-[#8]-[#6]~[#6]~[#6]~[#6]~[#6]-[#7]-c1ccc2ncsc2c1")
        self.iso_c7 = TDCIsomer("C7H8N2O2")
        self.iso_c9 = TDCIsomer("C9H10N2O2PF2Cl")
        self.iso_zale = TDCIsomer("C19H17N3O2")
        self.iso_sita = TDCIsomer("C16H15F6N5O")
        self.sim_mod = sim_mod

    def tanimoto(self, smiles, kind, ref):
        return DataStructs.TanimotoSimilarity(self.ref[ref], self.fp(smiles, kind))

    @staticmethod
    def smarts_score(mol, patt, inverse):
        found = len(mol.GetSubstructMatches(patt)) > 0
        return (0.0 if inverse else 1.0) if found else (1.0 if inverse else 0.0)

    def table(self):
        o = self
        f = {}
        f["albuterol_similarity"] = lambda s: o.sim_mod(o.tanimoto(s, "FCFP4", "albuterol"))
        f["mestranol_similarity"] = lambda s: o.sim_mod(o.tanimoto(s, "AP", "mestranol"))
        f["celecoxib_rediscovery"] = lambda s: o.tanimoto(s, "ECFP4", "celecoxib")
        f["troglitazone_rediscovery"] = lambda s: o.tanimoto(s, "ECFP4", "troglitazone")
        f["thiothixene_rediscovery"] = lambda s: o.tanimoto(s, "ECFP4", "thiothixene")
        f["isomers_c7h8n2o2"] = o.iso_c7
        f["isomers_c9h10n2o2pf2cl"] = o.iso_c9

        def median1(s):
            fp4 = o.fp(s, "ECFP4")
            return gmean([DataStructs.TanimotoSimilarity(o.ref["camphor"], fp4),
                          DataStructs.TanimotoSimilarity(o.ref["menthol"], fp4)])

        def median2(s):
            fp6 = o.fp(s, "ECFP6")
            return gmean([DataStructs.TanimotoSimilarity(o.ref["tadalafil"], fp6),
                          DataStructs.TanimotoSimilarity(o.ref["sildenafil"], fp6)])

        def osimertinib_mpo(s):
            mol = tdc_mol(s)
            fcfp4 = o.fp(s, "FCFP4")
            ecfp6 = o.fp(s, "ECFP6")
            tpsa_score = MaxGaussian(100, 10)(Descriptors.TPSA(mol))
            logp_score = MinGaussian(1, 1)(Descriptors.MolLogP(mol))
            sim1 = Clipped(0.8)(DataStructs.TanimotoSimilarity(o.ref["osimertinib_fcfp4"], fcfp4))
            sim2 = MinGaussian(0.85, 0.1)(DataStructs.TanimotoSimilarity(o.ref["osimertinib_ecfp6"], ecfp6))
            return gmean([tpsa_score, logp_score, sim1, sim2])

        def fexofenadine_mpo(s):
            mol = tdc_mol(s)
            ap = o.fp(s, "AP")
            tpsa_score = MaxGaussian(90, 10)(Descriptors.TPSA(mol))
            logp_score = MinGaussian(4, 1)(Descriptors.MolLogP(mol))
            sim = Clipped(0.8)(DataStructs.TanimotoSimilarity(ap, o.ref["fexofenadine"]))
            return gmean([tpsa_score, logp_score, sim])

        def ranolazine_mpo(s):
            mol = tdc_mol(s)
            ap = o.fp(s, "AP")
            tpsa_score = MaxGaussian(95, 20)(Descriptors.TPSA(mol))
            logp_score = MaxGaussian(7, 1)(Descriptors.MolLogP(mol))
            sim = Clipped(0.7)(DataStructs.TanimotoSimilarity(ap, o.ref["ranolazine"]))
            fluorine = Gaussian(1, 1.0)(AtomCounter("F")(mol))
            return gmean([tpsa_score, logp_score, sim, fluorine])

        def perindopril_mpo(s):
            mol = tdc_mol(s)
            sim = DataStructs.TanimotoSimilarity(o.fp(s, "ECFP4"), o.ref["perindopril"])
            arom = Gaussian(2, 0.5)(rdMolDescriptors.CalcNumAromaticRings(mol))
            return gmean([sim, arom])

        def amlodipine_mpo(s):
            mol = tdc_mol(s)
            sim = DataStructs.TanimotoSimilarity(o.fp(s, "ECFP4"), o.ref["amlodipine"])
            rings = Gaussian(3, 0.5)(rdMolDescriptors.CalcNumRings(mol))
            return gmean([sim, rings])

        def zaleplon_mpo(s):
            sim = DataStructs.TanimotoSimilarity(o.fp(s, "ECFP4"), o.ref["zaleplon"])
            return gmean([sim, o.iso_zale(s)])

        def sitagliptin_mpo(s):
            mol = Chem.MolFromSmiles(s)
            ecfp4 = o.fp(s, "ECFP4")
            logp_score = o.sita_logp(Descriptors.MolLogP(mol))
            tpsa_score = o.sita_tpsa(Descriptors.TPSA(mol))
            iso = o.iso_sita(s)
            sim = o.sita_sim(DataStructs.TanimotoSimilarity(ecfp4, o.ref["sitagliptin"]))
            return gmean([sim, logp_score, tpsa_score, iso])

        def deco_hop(s):
            mol = tdc_mol(s)
            sim = Clipped(0.85)(DataStructs.TanimotoSimilarity(fp_PHCO(mol), o.ref["pharmacophore"]))
            return tdc_mean([sim, o.smarts_score(mol, o.deco1, True), o.smarts_score(mol, o.deco2, True),
                             o.smarts_score(mol, o.scaffold, False)])

        def scaffold_hop(s):
            mol = tdc_mol(s)
            sim = Clipped(0.75)(DataStructs.TanimotoSimilarity(fp_PHCO(mol), o.ref["pharmacophore"]))
            return tdc_mean([sim, o.smarts_score(mol, o.shop_deco, False), o.smarts_score(mol, o.scaffold, True)])

        def valsartan_smarts(s):
            mol = tdc_mol(s)
            smarts = 1.0 if len(mol.GetSubstructMatches(o.val_smarts)) > 0 else 0.0
            logp_score = o.val_logp(Descriptors.MolLogP(mol))
            tpsa_score = o.val_tpsa(Descriptors.TPSA(mol))
            bertz_score = o.val_bertz(Descriptors.BertzCT(mol))
            return gmean([smarts, tpsa_score, logp_score, bertz_score])

        f["median1"] = median1
        f["median2"] = median2
        f["osimertinib_mpo"] = osimertinib_mpo
        f["fexofenadine_mpo"] = fexofenadine_mpo
        f["ranolazine_mpo"] = ranolazine_mpo
        f["perindopril_mpo"] = perindopril_mpo
        f["amlodipine_mpo"] = amlodipine_mpo
        f["sitagliptin_mpo"] = sitagliptin_mpo
        f["zaleplon_mpo"] = zaleplon_mpo
        f["valsartan_smarts"] = valsartan_smarts
        f["deco_hop"] = deco_hop
        f["scaffold_hop"] = scaffold_hop
        f["qed"] = lambda s: QED.qed(Chem.MolFromSmiles(s))
        return f


PMO_DESCRIPTIONS = {
    "albuterol_similarity": "FCFP4 Tanimoto to albuterol, Clipped(0.75)",
    "amlodipine_mpo": "geometric mean of ECFP4 Tanimoto to amlodipine and Gaussian(3, 0.5) on ring count",
    "celecoxib_rediscovery": "ECFP4 Tanimoto to celecoxib",
    "deco_hop": "arithmetic mean of PHCO similarity Clipped(0.85) and three SMARTS terms",
    "fexofenadine_mpo": "geometric mean: TPSA MaxGaussian(90,10), logP MinGaussian(4,1), AP Tanimoto Clipped(0.8)",
    "isomers_c7h8n2o2": "isomer score for C7H8N2O2 (geometric)",
    "isomers_c9h10n2o2pf2cl": "isomer score for C9H10N2O2PF2Cl (geometric)",
    "median1": "geometric mean of ECFP4 Tanimoto to camphor and menthol",
    "median2": "geometric mean of ECFP6 Tanimoto to tadalafil and sildenafil",
    "mestranol_similarity": "AP Tanimoto to mestranol, Clipped(0.75)",
    "osimertinib_mpo": "geometric mean: TPSA, logP, FCFP4 and ECFP6 similarity to osimertinib",
    "perindopril_mpo": "geometric mean of ECFP4 Tanimoto to perindopril and Gaussian(2, 0.5) on aromatic rings",
    "qed": "RDKit QED (rdkit.Chem.QED.qed)",
    "ranolazine_mpo": "geometric mean: TPSA, logP, AP similarity to ranolazine, one fluorine",
    "scaffold_hop": "arithmetic mean of PHCO similarity Clipped(0.75) and two SMARTS terms",
    "sitagliptin_mpo": "geometric mean: dissimilar to sitagliptin, same logP and TPSA, isomer C16H15F6N5O",
    "thiothixene_rediscovery": "ECFP4 Tanimoto to thiothixene",
    "troglitazone_rediscovery": "ECFP4 Tanimoto to troglitazone",
    "valsartan_smarts": "geometric mean: valsartan SMARTS present, sitagliptin-like logP, TPSA, BertzCT",
    "zaleplon_mpo": "geometric mean of ECFP4 Tanimoto to zaleplon and isomer C19H17N3O2",
}


# ---------------------------------------------------------------------------
# LOL-BO: SA score (RDKit Contrib) and penalised logP.

_SASCORER = None


def sascorer():
    global _SASCORER
    if _SASCORER is None:
        sys.path.insert(0, os.path.join(RDConfig.RDContribDir, "SA_Score"))
        import sascorer as mod  # shipped by Debian's rdkit-data
        _SASCORER = mod
    return _SASCORER


def cycle_basis_max(mol):
    """Length of the longest cycle in networkx 2.x cycle_basis(Graph(adjacency)).

    LOL-BO's _cycle_score builds nx.Graph(GetAdjacencyMatrix(mol)) and takes
    the longest cycle of nx.cycle_basis. The basis depends on the traversal,
    so the algorithm is reproduced step by step: nodes 0..n-1, neighbours
    in ascending order (from_numpy_array adds edges row by row), roots taken
    with set.pop() from the remaining nodes, depth-first by stack.
    """
    adj = rdmolops.GetAdjacencyMatrix(mol)
    n = adj.shape[0]
    nbrs = [[int(j) for j in np.nonzero(adj[i])[0]] for i in range(n)]
    gnodes = set(range(n))
    longest = 0
    root = None
    while gnodes:
        if root is None:
            root = gnodes.pop()
        stack = [root]
        pred = {root: root}
        used = {root: set()}
        while stack:
            z = stack.pop()
            zused = used[z]
            for nbr in nbrs[z]:
                if nbr not in used:
                    pred[nbr] = z
                    stack.append(nbr)
                    used[nbr] = {z}
                elif nbr == z:
                    longest = max(longest, 1)
                elif nbr not in zused:
                    pn = used[nbr]
                    length = 2
                    p = pred[z]
                    while p not in pn:
                        length += 1
                        p = pred[p]
                    length += 1
                    longest = max(longest, length)
                    used[nbr].add(z)
        gnodes -= set(pred)
        root = None
    return longest


def penalized_logp(smiles):
    mol = Chem.MolFromSmiles(smiles)
    logp = Crippen.MolLogP(mol)
    sa = sascorer().calculateScore(mol)
    cycle_length = cycle_basis_max(mol)
    if cycle_length <= 6:
        cycle_length = 0
    else:
        cycle_length = cycle_length - 6
    score = (
        (logp - 2.45777691) / 1.43341767
        + (-sa + 3.05352042) / 0.83460587
        + (-cycle_length - -0.04861121) / 0.28746695
    )
    return max(score, -float("inf"))


# ---------------------------------------------------------------------------
# Task registry.

class Task:
    def __init__(self, name, suite, description, fn, aliases=(), clip_negative=True, spec=None):
        self.name = name
        self.suite = suite
        self.description = description
        self.fn = fn  # Molecule -> float; raises ScoreError or any exception
        self.aliases = list(aliases)
        self.clip_negative = clip_negative
        self.spec = spec or []

    def info(self):
        return {"name": self.name, "aliases": self.aliases, "suite": self.suite,
                "description": self.description, "clip_negative": self.clip_negative,
                "top_k": self.spec}


GUACAMOL_DESCRIPTIONS = {
    "Celecoxib rediscovery": "ECFP4 Tanimoto to celecoxib, Clipped(1.0)",
    "Troglitazone rediscovery": "ECFP4 Tanimoto to troglitazone, Clipped(1.0)",
    "Thiothixene rediscovery": "ECFP4 Tanimoto to thiothixene, Clipped(1.0)",
    "Aripiprazole similarity": "ECFP4 Tanimoto to aripiprazole, Clipped(0.75)",
    "Albuterol similarity": "FCFP4 Tanimoto to albuterol, Clipped(0.75)",
    "Mestranol similarity": "AP Tanimoto to mestranol, Clipped(0.75)",
    "C11H24": "isomer score for C11H24 (geometric)",
    "C9H10N2O2PF2Cl": "isomer score for C9H10N2O2PF2Cl (geometric)",
    "Median molecules 1": "geometric mean of ECFP4 Tanimoto to menthol and camphor",
    "Median molecules 2": "geometric mean of ECFP6 Tanimoto to tadalafil and sildenafil",
    "Osimertinib MPO": "geometric mean: FCFP4 and ECFP6 similarity to osimertinib, TPSA, logP",
    "Fexofenadine MPO": "geometric mean: AP similarity to fexofenadine, TPSA, logP",
    "Ranolazine MPO": "geometric mean: AP similarity to ranolazine, logP, one fluorine, TPSA",
    "Perindopril MPO": "geometric mean: ECFP4 Tanimoto to perindopril, two aromatic rings",
    "Amlodipine MPO": "geometric mean: ECFP4 Tanimoto to amlodipine, three rings",
    "Sitagliptin MPO": "geometric mean: dissimilar to sitagliptin, same logP and TPSA, isomer C16H15F6N5O",
    "Zaleplon MPO": "geometric mean: ECFP4 Tanimoto to zaleplon, isomer C19H17N3O2",
    "Valsartan SMARTS": "geometric mean: valsartan SMARTS present, sitagliptin-like logP, TPSA, BertzCT",
    "Deco Hop": "arithmetic mean: PHCO similarity Clipped(0.85), decoration SMARTS absent, scaffold present",
    "Scaffold Hop": "arithmetic mean: PHCO similarity Clipped(0.75), decoration present, scaffold absent",
}


def build_tasks():
    tasks = []
    short = {v: k for k, v in NFBO_IDS.items()}
    for name, objective, spec in guacamol_objectives():
        aliases = [short[name]] if name in short else []

        def fn(m, objective=objective):
            return nfbo_guacamol_score(objective, m)

        tasks.append(Task(name, "guacamol", GUACAMOL_DESCRIPTIONS[name], fn, aliases=aliases, spec=spec))

    tdc = TDCOracles().table()
    for name in sorted(tdc):
        oracle = tdc[name]

        def fn(m, oracle=oracle):
            m.check()  # mol_opt: empty or unparsable scores 0
            return oracle(m.smiles)

        desc = PMO_DESCRIPTIONS[name]
        suite = "pmo"
        tasks.append(Task(name, suite, desc, fn))

    def sa(m):
        return sascorer().calculateScore(parse_checked(m.smiles))

    def plogp(m):
        m.check()
        return penalized_logp(m.smiles)

    def crippen(m):
        return Crippen.MolLogP(parse_checked(m.smiles))

    tasks.append(Task("logp", "lolbo", "penalised logP as in LOL-BO: normalised Crippen logP - SA - long cycles "
                      "(negative values kept)", plogp, aliases=["penalized_logp"], clip_negative=False))
    tasks.append(Task("sa", "lolbo", "synthetic accessibility score, 1 (easy) to 10 (hard), RDKit Contrib sascorer; lower is better: optimise it with -minimize",
                      sa))
    tasks.append(Task("crippen_logp", "rdkit", "Crippen logP (Descriptors.MolLogP; negative values kept)", crippen,
                      clip_negative=False))
    return tasks


# ---------------------------------------------------------------------------
# Protocol.

def score_one(task, m):
    """Scores Molecule m for task: (score, reason), reason "" for a real score, else why it is 0."""
    try:
        value = task.fn(m)
        if value is None:
            return 0.0, "no score"
        value = float(value)
    except ScoreError as e:
        return 0.0, str(e)
    except Exception as e:
        why = _take_messages()
        msg = "scoring failed: %s: %s" % (type(e).__name__, _truncate(str(e)))
        if why:
            msg += " (" + _truncate(why) + ")"
        return 0.0, msg
    if not math.isfinite(value):
        return 0.0, "non-finite score %r" % value
    if value < 0 and task.clip_negative:
        return 0.0, "negative score %r" % value
    return value, ""


def _each_canonical(req, make, what):
    """make(canonical SMILES) for each molecule of the request: the products ("" for a molecule that is invalid
    or that make fails on), the canonical SMILES and the reasons."""
    products, out, errors = [], [], []
    for s in _smiles_list(req):
        c, why = canonical_one(s, True)
        product = ""
        if c:
            try:
                product = make(c)
            except Exception as e:
                why = "%s failed: %s: %s" % (what, type(e).__name__, _truncate(str(e)))
                product = ""
        products.append(product)
        out.append(c)
        errors.append(why)
    return products, out, errors


def canonical_one(smiles, isomeric):
    try:
        mol = parse_checked(smiles)
        return Chem.MolToSmiles(mol, isomericSmiles=isomeric), ""
    except ScoreError as e:
        return "", str(e)
    except Exception as e:
        return "", "canonicalisation failed: %s: %s" % (type(e).__name__, _truncate(str(e)))


# ---------------------------------------------------------------------------
# Chemistry rules (op "check"): whether a chemist would make a molecule. The Go
# package chem/rules owns the rules' format and defaults; this is their one
# implementation. Compiled SMARTS and filter catalogues are kept per rule set.

_RULES_CACHE = {}

# The default rules' generated data (scripts/gen-rules.py; data/rules/ embedded in nfbo, written next to this
# worker and named by --rules-data DIR): the structural alerts rare in real molecules, and the Morgan radius-1
# atom environments real molecules hold. Loaded on first use.
RULES_DATA = None
_ALERTS = None
_ENVIRONMENTS = None


def _rules_data(name):
    if RULES_DATA is None:
        raise ValueError("%s needs the rules data (the worker was started without --rules-data)" % name)
    return os.path.join(RULES_DATA, name)


def generated_alerts():
    """The alerts of alerts.tsv: a list of (id "CATALOGUE:name", SMARTS, minimum count, default)."""
    global _ALERTS
    if _ALERTS is None:
        rows = []
        with open(_rules_data("alerts.tsv"), encoding="utf-8") as f:
            header = None
            for n, line in enumerate(f, 1):
                if line.startswith("#") or not line.strip():
                    continue
                fields = line.rstrip("\n").split("\t")
                if header is None:
                    header = fields
                    continue
                r = dict(zip(header, fields))
                rows.append((r["catalogue"] + ":" + r["name"], r["smarts"], int(r["min_count"]), r["default"] == "yes"))
        _ALERTS = rows
    return _ALERTS


def seen_environments():
    """The identifiers of the Morgan radius-1 environments of environments.txt.gz, a set."""
    global _ENVIRONMENTS
    if _ENVIRONMENTS is None:
        import gzip
        seen = set()
        with gzip.open(_rules_data("environments.txt.gz"), "rt") as f:
            for line in f:
                if not line.startswith("#"):
                    seen.add(int(line.split()[0]))
        _ENVIRONMENTS = seen
    return _ENVIRONMENTS


def unseen_environment(mol, seen):
    """The first atom environment (Morgan radius 0 or 1) of mol that is not in seen, as "C5 (radius 1)", or ""."""
    from rdkit.Chem import rdMolDescriptors
    info = {}
    fp = rdMolDescriptors.GetMorganFingerprint(mol, 1, bitInfo=info)
    for ident in sorted(fp.GetNonzeroElements()):
        if ident not in seen:
            atom, radius = min(info[ident])
            return "%s%d (radius %d)" % (mol.GetAtomWithIdx(atom).GetSymbol(), atom + 1, radius)
    return ""


class _CompiledRules:
    def __init__(self, rules):
        if not isinstance(rules, dict):
            raise ValueError('"rules" must be a JSON object')
        self.r = rules
        self.required = [self._smarts(s) for s in rules.get("required_smarts") or []]
        self.forbidden = [self._smarts(s) for s in rules.get("forbidden_smarts") or []]
        self.catalog = None
        names = rules.get("catalogs") or []
        if names:
            from rdkit.Chem import FilterCatalog
            params = FilterCatalog.FilterCatalogParams()
            known = {"PAINS": FilterCatalog.FilterCatalogParams.FilterCatalogs.PAINS,
                     "BRENK": FilterCatalog.FilterCatalogParams.FilterCatalogs.BRENK,
                     "NIH": FilterCatalog.FilterCatalogParams.FilterCatalogs.NIH,
                     "ZINC": FilterCatalog.FilterCatalogParams.FilterCatalogs.ZINC}
            for n in names:
                if n not in known:
                    raise ValueError("unknown catalogue %r (want PAINS, BRENK, NIH or ZINC)" % (n,))
                params.AddCatalog(known[n])
            self.catalog = FilterCatalog.FilterCatalog(params)
        self.alerts = []
        allow = rules.get("allow_alerts") or []
        if rules.get("alerts") or allow:
            known = generated_alerts()
            ids = {a[0] for a in known}
            for a in allow:
                if a not in ids:
                    raise ValueError("allow_alerts: unknown alert %r (see data/rules/alerts.tsv)" % (a,))
            if rules.get("alerts"):
                for ident, smarts, lo, default in known:
                    if default and ident not in allow:
                        q = Chem.MolFromSmarts(smarts)
                        if q is None:
                            raise ValueError("alert %s: invalid SMARTS %r" % (ident, smarts))
                        self.alerts.append((ident, q, lo))
        self.seen = None
        if rules.get("seen_environments"):
            self.seen = seen_environments()
            extra = rules.get("seen_molecules") or []
            if not isinstance(extra, list):
                raise ValueError('"seen_molecules" must be a list of SMILES')
            if extra:
                # The caller's own molecules are real chemistry too: their environments count as seen, so that
                # a series whose core no molecule of the two sets holds can still be grown.
                from rdkit.Chem import rdMolDescriptors
                self.seen = set(self.seen)
                for k, s in enumerate(extra):
                    mol = Chem.MolFromSmiles(s) if isinstance(s, str) else None
                    if mol is None:
                        raise ValueError("seen_molecules[%d]: invalid SMILES %r" % (k, s))
                    self.seen.update(rdMolDescriptors.GetMorganFingerprint(mol, 1).GetNonzeroElements())

    @staticmethod
    def _smarts(s):
        q = Chem.MolFromSmarts(s) if isinstance(s, str) else None
        if q is None:
            raise ValueError("invalid SMARTS %r" % (s,))
        return (s, q)

    def verdict(self, smiles):
        """Returns "" when the molecule passes, else the first rule it breaks."""
        r = self.r
        try:
            mol = parse_checked(smiles)
        except ScoreError as e:
            return str(e)
        if r.get("closed_shell"):
            for a in mol.GetAtoms():
                if a.GetNumRadicalElectrons() > 0:
                    return "radical on %s%d" % (a.GetSymbol(), a.GetIdx() + 1)
        elements = r.get("elements")
        if elements:
            for a in mol.GetAtoms():
                if a.GetSymbol() not in elements:
                    return "element %s not allowed" % a.GetSymbol()
        charges = r.get("charges")
        if charges is not None:
            allowed = charges.get("elements") or []
            for a in mol.GetAtoms():
                q = a.GetFormalCharge()
                if q != 0 and (a.GetSymbol() not in allowed or abs(q) > 1):
                    return "formal charge %+d on %s" % (q, a.GetSymbol())
            q = sum(a.GetFormalCharge() for a in mol.GetAtoms())
            if abs(q) > (charges.get("max_abs_net") or 0):
                return "net charge %+d" % q
        lo, hi = r.get("min_mw") or 0, r.get("max_mw") or 0
        if lo or hi:
            mw = Descriptors.MolWt(mol)
            if (lo and mw < lo) or (hi and mw > hi):
                return "molecular weight %.1f outside %g-%g" % (mw, lo, hi if hi else float("inf"))
        lo, hi = r.get("min_heavy_atoms") or 0, r.get("max_heavy_atoms") or 0
        n = mol.GetNumHeavyAtoms()
        if (lo and n < lo) or (hi and n > hi):
            return "%d heavy atoms" % n
        ring = r.get("max_ring_size") or 0
        if ring:
            sizes = [len(x) for x in mol.GetRingInfo().AtomRings()]
            if sizes and max(sizes) > ring:
                return "ring of %d atoms" % max(sizes)
        for s, q in self.required:
            if not mol.HasSubstructMatch(q):
                return "lacks required SMARTS %s" % s
        for s, q in self.forbidden:
            if mol.HasSubstructMatch(q):
                return "has forbidden SMARTS %s" % s
        # The costly checks cheapest first, since a molecule stops at the first rule it breaks and most of what
        # the optimiser decodes breaks one: the environments (a radius-1 fingerprint and set lookups, about 0.05 ms a
        # ZINC molecule), then the 261 generated alerts (about 1 ms), then the catalogues (PAINS about 1.7 ms).
        if self.seen is not None:
            where = unseen_environment(mol, self.seen)
            if where:
                return "unseen environment at %s: no molecule of ZINC250k or GuacaMol 10k%s holds it" % (
                    where, " (nor of seen_molecules)" if self.r.get("seen_molecules") else "")
        for ident, q, lo in self.alerts:
            if lo <= 1:
                if mol.HasSubstructMatch(q):
                    return "alert %s" % ident
            elif len(mol.GetSubstructMatches(q, maxMatches=lo)) >= lo:
                return "alert %s" % ident
        if self.catalog is not None:
            e = self.catalog.GetFirstMatch(mol)
            if e is not None:
                return "alert: %s" % e.GetDescription()
        sa = r.get("max_sa") or 0
        if sa:
            v = sascorer().calculateScore(mol)
            if v > sa:
                return "SA score %.2f above %g" % (v, sa)
        return ""


def standardize_one(text, molblock):
    """The parent molecule of a SMILES or a molfile block: the largest organic fragment of a salt or mixture,
    neutralised where a charge was only the salt's. Returns (smiles, note, error); note says what changed."""
    from rdkit.Chem.MolStandardize import rdMolStandardize
    _take_messages()
    if molblock:
        mol = Chem.MolFromMolBlock(text) if text else None
        if mol is None:
            why = _take_messages()
            return "", "", "invalid molfile" + (": " + _truncate(why) if why else "")
    else:
        try:
            mol = parse_checked(text)
        except ScoreError as e:
            return "", "", str(e)
    frags = Chem.GetMolFrags(mol, asMols=True)
    note = ""
    if len(frags) > 1:
        parent = rdMolStandardize.LargestFragmentChooser(preferOrganic=True).choose(mol)
        kept = Chem.MolToSmiles(parent)
        dropped = sorted(Chem.MolToSmiles(f) for f in frags if Chem.MolToSmiles(f) != kept)
        neutral = rdMolStandardize.Uncharger().uncharge(parent)
        note = "kept the largest fragment of %d (dropped %s)" % (len(frags), ", ".join(dropped))
        if Chem.MolToSmiles(neutral) != kept:
            note += ", neutralised"
        mol = neutral
    return Chem.MolToSmiles(mol), note, ""


def _smiles_list(req):
    smiles = req.get("smiles")
    if not isinstance(smiles, list):
        raise ValueError('"smiles" must be a list of strings')
    return [s if isinstance(s, str) else "" for s in smiles]


def handle(req, state):
    op = req.get("op")
    if op == "hello" or op == "version":
        return {"ok": True, "protocol": PROTOCOL_VERSION, "rdkit": rdkit.__version__,
                "numpy": np.__version__, "python": sys.version.split()[0], "pid": os.getpid()}
    if op == "tasks":
        return {"ok": True, "tasks": [t.info() for t in state["tasks"]]}
    if op == "score":
        # "task" scores one task; "tasks" scores several on the same parsed
        # molecules (sharing parses and fingerprints) and answers a list per task.
        names = req.get("tasks")
        single = names is None
        if single:
            names = [req.get("task")]
        if not isinstance(names, list) or not names:
            return {"ok": False, "error": '"tasks" must be a non-empty list of task names'}
        tasks = []
        for name in names:
            task = state["by_name"].get(name) if isinstance(name, str) else None
            if task is None:
                return {"ok": False, "error": "unknown task %r (op \"tasks\" lists them)" % (name,)}
            tasks.append(task)
        smiles = _smiles_list(req)
        scores = [[0.0] * len(smiles) for _ in tasks]
        errors = [[""] * len(smiles) for _ in tasks]
        t0 = time.perf_counter()
        for i, s in enumerate(smiles):
            m = Molecule(s)
            for j, task in enumerate(tasks):
                scores[j][i], errors[j][i] = score_one(task, m)
        seconds = time.perf_counter() - t0
        if single:
            return {"ok": True, "scores": scores[0], "errors": errors[0], "seconds": seconds}
        return {"ok": True, "scores": scores, "errors": errors, "seconds": seconds}
    if op == "canonicalize":
        isomeric = req.get("isomeric", True) is not False
        out, errors = [], []
        t0 = time.perf_counter()
        for s in _smiles_list(req):
            c, why = canonical_one(s, isomeric)
            out.append(c)
            errors.append(why)
        return {"ok": True, "canonical": out, "errors": errors, "seconds": time.perf_counter() - t0}
    if op == "check":
        key = json.dumps(req.get("rules"), sort_keys=True)
        compiled = _RULES_CACHE.get(key)
        if compiled is None:
            try:
                compiled = _CompiledRules(req.get("rules"))
            except ValueError as e:
                return {"ok": False, "error": "rules: %s" % e}
            _RULES_CACHE[key] = compiled
        t0 = time.perf_counter()
        errors = []
        for s in (_smiles_list(req) if req.get("smiles") is not None else []):
            try:
                errors.append(compiled.verdict(s))
            except Exception as e:
                errors.append("check failed: %s: %s" % (type(e).__name__, _truncate(str(e))))
        return {"ok": True, "errors": errors, "seconds": time.perf_counter() - t0}
    if op == "standardize":
        # Initial molecules as chemists keep them: salts and mixtures reduced to the parent, molfiles read.
        texts = req.get("molblocks")
        molblock = texts is not None
        if not molblock:
            texts = _smiles_list(req)
        elif not isinstance(texts, list):
            return {"ok": False, "error": '"molblocks" must be a list of strings'}
        out, notes, errors = [], [], []
        t0 = time.perf_counter()
        for t in texts:
            try:
                c, note, why = standardize_one(t if isinstance(t, str) else "", molblock)
            except Exception as e:
                c, note, why = "", "", "standardisation failed: %s: %s" % (type(e).__name__, _truncate(str(e)))
            out.append(c)
            notes.append(note)
            errors.append(why)
        return {"ok": True, "canonical": out, "notes": notes, "errors": errors, "seconds": time.perf_counter() - t0}
    if op == "draw":
        # 2D structure drawings for reports: one SVG per molecule (no XML header, so that it can be inlined in
        # HTML), with its canonical SMILES; an invalid molecule gets an empty drawing and the reason.
        width, height = req.get("width", 250), req.get("height", 200)
        if not isinstance(width, int) or not isinstance(height, int) or not (16 <= width <= 4096 and 16 <= height <= 4096):
            return {"ok": False, "error": '"width" and "height" must be integers from 16 to 4096'}

        def draw(c):
            from rdkit.Chem.Draw import rdMolDraw2D
            d = rdMolDraw2D.MolDraw2DSVG(width, height)
            d.drawOptions().clearBackground = False
            # One scale for every molecule (a small one is not blown up to fill its box); a molecule too large
            # for the box at that scale is shrunk to fit.
            d.drawOptions().fixedBondLength = 18
            rdMolDraw2D.PrepareAndDrawMolecule(d, Chem.MolFromSmiles(c))
            d.FinishDrawing()
            svg = d.GetDrawingText()
            return svg[svg.index("<svg"):] if "<svg" in svg else ""

        t0 = time.perf_counter()
        svgs, out, errors = _each_canonical(req, draw, "drawing")
        return {"ok": True, "svgs": svgs, "canonical": out, "errors": errors, "seconds": time.perf_counter() - t0}
    if op == "molblocks":
        # Molfile blocks with 2D coordinates, for SDF files (nfbo status -o FILE.sdf): one per molecule, with its
        # canonical SMILES; an invalid molecule gets an empty block and the reason.
        def molblock(c):
            mol = Chem.MolFromSmiles(c)
            AllChem.Compute2DCoords(mol)
            return Chem.MolToMolBlock(mol)

        t0 = time.perf_counter()
        blocks, out, errors = _each_canonical(req, molblock, "molfile block")
        return {"ok": True, "molblocks": blocks, "canonical": out, "errors": errors, "seconds": time.perf_counter() - t0}
    return {"ok": False, "error": "unknown op %r" % (op,)}


def write(resp):
    _OUT.write(json.dumps(resp, allow_nan=False, ensure_ascii=True) + "\n")
    _OUT.flush()


def main():
    global MAX_SMILES_LEN
    global RULES_DATA
    args = sys.argv[1:]
    while args:
        if len(args) >= 2 and args[0] == "--max-smiles-len":
            MAX_SMILES_LEN = int(args[1])
        elif len(args) >= 2 and args[0] == "--rules-data":
            RULES_DATA = args[1]
        else:
            sys.stderr.write("usage: worker.py [--max-smiles-len N] [--rules-data DIR]\n")
            sys.exit(2)
        args = args[2:]
    if _IMPORT_ERROR is not None:
        msg = ("RDKit is not available to %s (%s); install it with: "
               "sudo apt-get install python3-rdkit rdkit-data python3-numpy" % (sys.executable, _IMPORT_ERROR))
        sys.stderr.write("nfbo-rdkit-worker: " + msg + "\n")
        for line in sys.stdin.buffer:
            try:
                rid = json.loads(line.decode("utf-8", "replace")).get("id")
            except Exception:
                rid = None
            write({"id": rid, "ok": False, "error": msg, "rdkit_missing": True})
        return
    _setup_rdkit_logging()
    tasks = build_tasks()
    by_name = {}
    for t in tasks:
        by_name[t.name] = t
        for a in t.aliases:
            by_name[a] = t
    state = {"tasks": tasks, "by_name": by_name}
    for raw in sys.stdin.buffer:
        rid = None
        try:
            req = json.loads(raw.decode("utf-8", "replace"))
            if not isinstance(req, dict):
                raise ValueError("request is not a JSON object")
        except ValueError as e:
            write({"id": None, "ok": False, "error": "bad request: %s" % _truncate(str(e))})
            continue
        rid = req.get("id")
        try:
            resp = handle(req, state)
        except Exception as e:
            traceback.print_exc(file=sys.stderr)
            resp = {"ok": False, "error": "bad request: %s: %s" % (type(e).__name__, _truncate(str(e)))}
        resp["id"] = rid
        write(resp)


if __name__ == "__main__":
    main()
