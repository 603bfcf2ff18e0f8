"""Python client for ``nfbo serve``: ask for molecules, score them in Python, tell the scores back.

``nfbo serve -run DIR`` offers an nfbo ask/tell run over HTTP/JSON. This module talks to it with the
standard library only (``urllib`` and ``json``), so it works in any Python 3.8 or later, in a notebook or
on a lab machine, with nothing else installed::

    from nfbo_client import Client

    nfbo = Client("http://127.0.0.1:8080")
    batch = nfbo.ask()                        # batch.molecules: [Molecule(id="m1", smiles="CCO"), ...]
    scores = {m.id: my_assay(m.smiles) for m in batch}
    print(nfbo.tell(scores))                  # TellReply(new=40, repeated=0, calls=40, awaiting=0)
    print(nfbo.status().best[0])              # Best(call=17, score=0.93, smiles="...")

or, when the score is a Python function, the whole run in one call::

    final = nfbo.loop(my_assay)               # ask, score, tell until the budget is spent

Asks and tells may be repeated safely, say after a dropped connection or a restarted kernel: the server
answers every ask with the same batch until that batch is told, and a score told twice counts once (a
changed score for a molecule already told is refused). A tell is all or nothing: a bad row is refused with
its line and nothing of that request is applied.

Errors from the server raise :class:`ServeError` carrying the HTTP status and the server's message; a
server that cannot be reached raises ``urllib.error.URLError`` (an ``OSError``), and nothing is retried.
"""

import json
import math
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Tuple, Union

__version__ = "0.1.0"
__all__ = ["Client", "Batch", "Molecule", "TellReply", "Status", "Best", "ServeError", "loop", "DEFAULT_URL"]

#: Where ``nfbo serve`` listens unless given ``-addr``.
DEFAULT_URL = "http://127.0.0.1:8080"


class Molecule(NamedTuple):
    """A molecule handed out by ask: its id, to tell its score by, and its RDKit canonical SMILES.

    A tuple, so ``for mol_id, smiles in batch`` works.
    """

    id: str
    smiles: str


class Best(NamedTuple):
    """One of the best molecules found so far: the paid call that scored it, its score and SMILES."""

    call: int
    score: float
    smiles: str


@dataclass(frozen=True)
class Batch:
    """The answer to an ask.

    ``molecules`` are the molecules to score (empty once the run is finished); ``calls`` is the number of
    scores paid for so far and ``budget`` the run's limit. Iterating a Batch, and ``len``, go over its
    molecules.
    """

    molecules: List[Molecule]
    finished: bool
    calls: int
    budget: int

    def __iter__(self) -> Iterator[Molecule]:
        return iter(self.molecules)

    def __len__(self) -> int:
        return len(self.molecules)


@dataclass(frozen=True)
class TellReply:
    """The answer to a tell.

    ``new`` molecules were paid for now; ``repeated`` rows were already told with the same answer (counted
    once, not paid again); ``calls`` is the number of paid calls after the tell; ``awaiting`` the number of
    molecules handed out and not told yet.
    """

    new: int
    repeated: int
    calls: int
    awaiting: int


@dataclass(frozen=True)
class Status:
    """A run as the server sees it: its settings, progress, the molecules awaiting scores and the best ten."""

    task: str
    method: str
    seed: int
    budget: int
    calls: int
    finished: bool
    awaiting: List[Molecule]
    best: List[Best]


class ServeError(Exception):
    """An error answer of the server: ``status`` is the HTTP status, ``message`` the server's ``{"error"}``.

    A 400 from a tell names the bad row as ``request body:LINE: ...``, LINE counting the rows sent from 1;
    nothing of that tell was applied. A 401 means a missing or wrong token, a 409 a run not made yet (ask
    first).
    """

    def __init__(self, status: int, message: str):
        super().__init__(status, message)
        self.status = status
        self.message = message

    def __str__(self) -> str:
        return "nfbo serve: %d: %s" % (self.status, self.message)


# A row of a tell: (id, score) or (id, None, error).
Row = Union[Tuple[str, Optional[float]], Tuple[str, Optional[float], Optional[str]]]


class Client:
    """A connection to ``nfbo serve`` at ``base_url``.

    ``token`` is the bearer token of a server started with ``-token-file`` (required by the server on any
    address but a loopback one); ``timeout`` is the seconds to wait for an answer, long because an ask runs
    the optimiser to its next batch.

    Example::

        nfbo = Client("http://127.0.0.1:8080", token=open("token").read().strip())
        batch = nfbo.ask()
        nfbo.tell({m.id: len(m.smiles) / 10 for m in batch})
    """

    def __init__(self, base_url: str = DEFAULT_URL, token: Optional[str] = None, timeout: float = 600):
        base = base_url.rstrip("/")
        # Accept the URL serve prints (http://HOST:PORT/v1/) as well as the bare one.
        if base.endswith("/v1"):
            base = base[: -len("/v1")]
        self.base_url = base
        self.token = token
        self.timeout = timeout

    def __repr__(self) -> str:
        return "Client(%r)" % self.base_url

    def ask(self) -> Batch:
        """Return the next batch of molecules to score.

        Asking again before the batch is told gives the same batch; after part of it is told, the rest of it.
        Once the budget is spent the batch is empty and ``finished`` is true.
        """
        rep = self._json("POST", "/v1/ask", b"")
        return Batch(
            molecules=[_molecule(m) for m in rep["batch"]],
            finished=bool(rep["finished"]),
            calls=int(rep["calls"]),
            budget=int(rep["budget"]),
        )

    def tell(self, scores: Union[Dict[str, Optional[float]], Iterable[Row]]) -> TellReply:
        """Tell scores for molecules handed out by ask, all of a batch or part of it.

        ``scores`` is a dict ``{id: score}``, or an iterable of ``(id, score)`` pairs or of
        ``(id, None, error)`` rows for molecules that have no score (the synthesis failed, say): those are
        paid for and logged with score 0 and the error. Every score must be a finite number; anything else
        raises ValueError naming the id before anything is sent. The server refuses (:class:`ServeError`
        400, naming the row's line) an unknown id or a changed answer for a molecule already told, and then
        applies nothing of the request.

        Example::

            nfbo.tell({"m1": 0.52, "m2": 0.17})
            nfbo.tell([("m3", 0.8), ("m4", None, "did not crystallise")])
        """
        items = scores.items() if isinstance(scores, dict) else scores
        lines = []
        for row in items:
            lines.append(json.dumps(_row(row), allow_nan=False))
        if not lines:
            raise ValueError("nfbo_client: tell: no scores")
        body = ("\n".join(lines) + "\n").encode("utf-8")
        rep = self._json("POST", "/v1/tell", body, "application/x-ndjson")
        return TellReply(
            new=int(rep["new"]), repeated=int(rep["repeated"]), calls=int(rep["calls"]), awaiting=int(rep["awaiting"])
        )

    def status(self) -> Status:
        """Return the run's status: task, budget, calls, the molecules awaiting scores and the best ten."""
        rep = self._json("GET", "/v1/status")
        return Status(
            task=rep["task"],
            method=rep["method"],
            seed=int(rep["seed"]),
            budget=int(rep["budget"]),
            calls=int(rep["calls"]),
            finished=bool(rep["finished"]),
            awaiting=[_molecule(m) for m in rep["awaiting"]],
            best=[Best(call=int(b["call"]), score=float(b["score"]), smiles=b["smiles"]) for b in rep["best"]],
        )

    def report(self) -> str:
        """Return the run's table of Top-k and AUC Top-k, as Markdown."""
        return self._request("GET", "/v1/report").decode("utf-8")

    def report_html(self) -> str:
        """Return the run's page, its curve and best molecules drawn, as HTML.

        In a notebook: ``IPython.display.HTML(nfbo.report_html())``.
        """
        return self._request("GET", "/v1/report.html").decode("utf-8")

    def loop(
        self,
        score_fn: Callable[[str], float],
        on_batch: Optional[Callable[[Batch, TellReply], Any]] = None,
        max_batches: Optional[int] = None,
        stop_if_all_fail: bool = True,
    ) -> Status:
        """Ask, score every SMILES with ``score_fn``, tell, and repeat until the run is finished.

        A molecule for which ``score_fn`` raises an exception, or returns something other than a finite
        number, is told as an error row with the exception's text: it is paid for and logged with score 0.
        But when every molecule of a batch fails, loop raises the first molecule's exception instead of
        telling, since that is almost always a bug in ``score_fn`` and telling would spend the budget; pass
        ``stop_if_all_fail=False`` when whole batches may fail. ``on_batch(batch, reply)``, when given, is
        called after each tell (to print progress, say); ``max_batches`` stops after that many batches.
        Returns the run's status at the end.

        Since asks and tells may be repeated, an interrupted loop can be called again to go on.

        Example::

            from rdkit import Chem
            from rdkit.Chem import QED

            final = Client().loop(lambda smiles: QED.qed(Chem.MolFromSmiles(smiles)))
            print(final.best[:3])
        """
        done = 0
        while max_batches is None or done < max_batches:
            batch = self.ask()
            if batch.finished or not batch.molecules:
                break
            rows: List[Row] = []
            failures: List[BaseException] = []
            for mol in batch:
                try:
                    score = _finite(score_fn(mol.smiles), "score_fn(%r) returned" % mol.smiles)
                    rows.append((mol.id, score))
                except Exception as exc:  # any failure of the user's function is the molecule's, not the loop's
                    failures.append(exc)
                    rows.append((mol.id, None, _error_text(exc)))
            if stop_if_all_fail and len(failures) == len(batch):
                raise failures[0]
            reply = self.tell(rows)
            if on_batch is not None:
                on_batch(batch, reply)
            done += 1
        return self.status()

    def _json(
        self, method: str, path: str, body: Optional[bytes] = None, content_type: Optional[str] = None
    ) -> Dict[str, Any]:
        data = self._request(method, path, body, content_type)
        try:
            return json.loads(data.decode("utf-8"))
        except ValueError as exc:
            raise ServeError(200, "%s %s: the answer is not JSON: %s" % (method, path, exc)) from None

    def _request(
        self, method: str, path: str, body: Optional[bytes] = None, content_type: Optional[str] = None
    ) -> bytes:
        req = urllib.request.Request(self.base_url + path, data=body, method=method)
        if content_type is not None:
            req.add_header("Content-Type", content_type)
        if self.token is not None:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.read()
        except urllib.error.HTTPError as exc:
            raise ServeError(exc.code, _error_message(exc)) from None


def loop(
    score_fn: Callable[[str], float],
    client: Optional[Client] = None,
    on_batch: Optional[Callable[[Batch, TellReply], Any]] = None,
    max_batches: Optional[int] = None,
    stop_if_all_fail: bool = True,
) -> Status:
    """Run :meth:`Client.loop` on ``client``, by default a Client of the server at :data:`DEFAULT_URL`.

    Example::

        import nfbo_client
        final = nfbo_client.loop(lambda smiles: len(smiles) / 10)
    """
    if client is None:
        client = Client()
    return client.loop(score_fn, on_batch=on_batch, max_batches=max_batches, stop_if_all_fail=stop_if_all_fail)


def _molecule(m: Dict[str, Any]) -> Molecule:
    return Molecule(id=m["id"], smiles=m["smiles"])


def _finite(score: Any, what: str) -> float:
    """Return score as a float, or raise ValueError saying ``what`` it was when it is not a finite number."""
    # bool is an int, and a str would be parsed by float(): neither is a score anyone means.
    if isinstance(score, (bool, str, bytes)) or score is None:
        raise ValueError("%s %r, not a number" % (what, score))
    try:
        v = float(score)
    except (TypeError, ValueError):
        raise ValueError("%s %r, not a number" % (what, score)) from None
    if not math.isfinite(v):
        raise ValueError("%s %r, not a finite number" % (what, score))
    return v


def _row(row: Any) -> Dict[str, Any]:
    """Return one tell row as its JSON object, checking it first."""
    if isinstance(row, (str, bytes)) or not isinstance(row, (tuple, list)) or len(row) not in (2, 3):
        raise ValueError("nfbo_client: tell: row %r: want (id, score) or (id, None, error)" % (row,))
    mol_id = str(row[0])
    score = row[1]
    error = row[2] if len(row) == 3 else None
    if error:
        if score is not None:
            raise ValueError("nfbo_client: tell: id %s: both a score (%r) and an error (%r)" % (mol_id, score, error))
        if not str(error).strip():
            raise ValueError("nfbo_client: tell: id %s: an empty error" % mol_id)
        return {"id": mol_id, "error": str(error)}
    if score is None:
        raise ValueError(
            "nfbo_client: tell: id %s: no score (give a number, or (id, None, error) saying why there is none)" % mol_id
        )
    return {"id": mol_id, "score": _finite(score, "nfbo_client: tell: id %s: score" % mol_id)}


def _error_text(exc: BaseException) -> str:
    text = str(exc).strip()
    return "%s: %s" % (type(exc).__name__, text) if text else type(exc).__name__


def _error_message(exc: urllib.error.HTTPError) -> str:
    """Return the server's {"error"} from an error answer, or the answer's text when it is something else."""
    try:
        raw = exc.read()
    except OSError:
        raw = b""
    text = raw.decode("utf-8", "replace").strip()
    try:
        return str(json.loads(text)["error"])
    except (ValueError, KeyError, TypeError):
        return text or str(exc.reason)
