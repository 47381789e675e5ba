"""Replay a LoCoMo conversation file through a running gateway and measure recall (and injection).

Each turn becomes one memory of its conversation's identity (``locomo:<sample_id>``): title
``"<speaker> — <session date>"``, body the turn text plus ``" [image: <caption>]"`` when the turn
shares an image. Turns are written in order through ``meta/agent_memory/remember_batch``, up to
:data:`WRITE_CHUNK` per call (one transaction each), as a host importing a conversation would. Every question of categories 1–4 is then asked through
``meta/agent_memory/recall`` (``max_entries`` 10) and, with ``inject=True``, through
``meta/turn/inject`` with one session per conversation. A hit at *k* means an evidence turn is
among the first *k* records (or inside the injected block).

Evidence labels are noisy (``D8:6; D9:17``, ``D``, ``D:11:26``, ids that name no turn): every
well-formed ``D<session>:<turn>`` id is used, the rest are counted as skipped; a question left
with no usable evidence is skipped and counted.
"""

from __future__ import annotations

import re
import statistics
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from . import strict_json
from .sdk.transport import NotAGateway, _rpc_url, transport_failure
from .stats import percentile

__all__ = ["ReplayRefused", "ReplayReport", "load_conversations", "replay"]

KS = (1, 5, 8, 10)
#: Turns written per ``meta/agent_memory/remember_batch`` call.
WRITE_CHUNK = 512
#: Seconds the replay client waits to connect, and for each answer.
_TIMEOUT_S = 60.0
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_EVIDENCE = re.compile(r"D\d+:\d+")


@dataclass
class ReplayReport:
    """Figures of one replay. ``hits[category][k]`` counts questions with an evidence turn in the top k."""

    turns: int = 0
    questions: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    hits: dict[int, dict[int, int]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(int)))
    skipped_questions: int = 0
    malformed_evidence: int = 0
    remember_seconds: float = 0.0
    recall_ms: list[float] = field(default_factory=list)
    inject_ms: list[float] = field(default_factory=list)
    inject_hits: int = 0
    inject_questions: int = 0
    inject_bytes: list[int] = field(default_factory=list)
    inject_skips: Counter[str] = field(default_factory=Counter)

    def recall_at(self, k: int, category: int | None = None) -> float | None:
        """The share of scored questions (of ``category``, or all) with an evidence turn in the top ``k``;
        ``None`` when there is no such question (nothing to score is not a recall of 0)."""
        cats = [category] if category is not None else list(CATEGORIES)
        total = sum(self.questions[c] for c in cats)
        return sum(self.hits[c][k] for c in cats) / total if total else None

    def to_dict(self) -> dict[str, Any]:
        def pct(values: list[float] | list[int], p: float) -> float | None:
            return round(percentile(values, p), 2) if values else None

        out: dict[str, Any] = {
            "turns": self.turns,
            "questions": sum(self.questions.values()),
            "skipped_questions": self.skipped_questions,
            "malformed_evidence_ids": self.malformed_evidence,
            "remember_seconds": round(self.remember_seconds, 2),
            "recall_at": {
                "overall": {k: _rounded(self.recall_at(k)) for k in KS},
                **{CATEGORIES[c]: {k: _rounded(self.recall_at(k, c)) for k in KS} for c in CATEGORIES},
            },
            "recall_latency_ms": {"p50": pct(self.recall_ms, 50), "p99": pct(self.recall_ms, 99)},
        }
        if self.inject_questions:
            out["inject"] = {
                "questions": self.inject_questions,
                "evidence_in_block": round(self.inject_hits / self.inject_questions, 4),
                "block_bytes": {"p50": pct(self.inject_bytes, 50), "p90": pct(self.inject_bytes, 90),
                                "max": max(self.inject_bytes) if self.inject_bytes else None,
                                "mean": round(statistics.mean(self.inject_bytes), 1) if self.inject_bytes else None},
                "skip_reasons": dict(self.inject_skips),
                "latency_ms": {"p50": pct(self.inject_ms, 50), "p99": pct(self.inject_ms, 99)},
            }
        return out


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def load_conversations(path: Path | str) -> list[dict[str, Any]]:
    """The samples of a LoCoMo JSON file (a list of ``{sample_id, conversation, qa}``).

    Raises ``ValueError`` naming the file and, for a sample that does not have the LoCoMo shape, the
    sample (1-based), its session and turn, and the field: ``conversation`` an object whose
    ``session_<n>`` entries are lists of turns, each turn an object with string ``dia_id`` and
    ``speaker`` (``text`` and ``blip_caption`` strings when present); ``qa`` a list of objects with a
    string ``question`` and an ``evidence`` list when present."""
    try:
        data = strict_json.loads(Path(path).read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ValueError(f"{path}: is not UTF-8 text") from None
    except ValueError as exc:  # not JSON, or an object naming a key twice
        raise ValueError(f"{path}: is not JSON ({exc})") from None
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of LoCoMo samples, not {strict_json.kind_of(data)}")
    for number, sample in enumerate(data, start=1):
        problem = _sample_problem(sample)
        if problem is not None:
            shown = f" ({sample['sample_id']})" if isinstance(sample, dict) and "sample_id" in sample else ""
            raise ValueError(f"{path}: sample {number}{shown}: {problem}")
    return data


def _sample_problem(sample: Any) -> str | None:
    """What keeps ``sample`` from being a LoCoMo sample, or ``None``."""
    if not isinstance(sample, dict):
        return f"expected an object, not {strict_json.kind_of(sample)}"
    conv = sample.get("conversation")
    if not isinstance(conv, dict):
        return "'conversation' must be an object"
    for key, turns in conv.items():
        if not re.fullmatch(r"session_\d+", key):
            continue
        if not isinstance(turns, list):
            return f"{key} must be a list of turns"
        for n, turn in enumerate(turns, start=1):
            if not isinstance(turn, dict):
                return f"{key} turn {n}: expected an object"
            for name in ("dia_id", "speaker"):
                if not isinstance(turn.get(name), str):
                    return f"{key} turn {n}: {name!r} must be a string"
            for name in ("text", "blip_caption"):
                if turn.get(name) is not None and not isinstance(turn[name], str):
                    return f"{key} turn {n}: {name!r} must be a string"
    qa = sample.get("qa", [])
    if not isinstance(qa, list):
        return "'qa' must be a list"
    for n, item in enumerate(qa, start=1):
        if not isinstance(item, dict) or not isinstance(item.get("question"), str):
            return f"qa {n}: expected an object with a string 'question'"
        if item.get("evidence") is not None and not isinstance(item["evidence"], list):
            return f"qa {n}: 'evidence' must be a list"
    return None


def _turns(sample: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(dia_id, title, body)`` for every turn of a sample, in order."""
    conv = sample["conversation"]
    sessions = sorted((int(k.split("_")[1]), k) for k in conv if re.fullmatch(r"session_\d+", k))
    out = []
    for number, key in sessions:
        date = conv.get(f"session_{number}_date_time", "")
        for turn in conv[key]:
            body = turn.get("text", "").strip()
            caption = turn.get("blip_caption")
            if caption:
                body = f"{body} [image: {caption}]".strip()
            if not body:
                continue
            out.append((turn["dia_id"], f"{turn['speaker']} — {date}".strip(" —"), body))
    return out


def _evidence(raw: list[Any], known: set[str], report: ReplayReport) -> set[str]:
    ids: set[str] = set()
    for item in raw or []:
        found = _EVIDENCE.findall(str(item))
        if not found or "".join(found) != re.sub(r"[\s;,]", "", str(item)):
            report.malformed_evidence += 1
        ids.update(f for f in found if f in known)
    return ids


class ReplayRefused(RuntimeError):
    """The gateway refused a call of the replay. ``error`` is its JSON-RPC error object as it answered it
    (``{code, message, data: {kind, ...}}``); the message says which call it refused."""

    def __init__(self, message: str, error: Any) -> None:
        super().__init__(message)
        self.error: dict[str, Any] = dict(error) if isinstance(error, dict) else {"code": None, "message": str(error)}


class _Rpc:
    def __init__(self, url: str, token: str | None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.url = _rpc_url(url)
        self.client = httpx.Client(headers=headers, timeout=_TIMEOUT_S)
        self.n = 0
        self.answered = False  # the gateway answered a call: a connection it closes later is a call dropped

    def batch(self, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        payload = []
        for method, params in calls:
            self.n += 1
            payload.append({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})
        url = self.url
        try:
            resp = self.client.post(url, json=payload)
        except httpx.TransportError as exc:
            raise transport_failure(url, exc, _TIMEOUT_S, answered=self.answered) from None
        try:
            body = resp.json()
        except ValueError:
            body = None
        if isinstance(body, dict) and body.get("jsonrpc") == "2.0" and isinstance(body.get("error"), dict):
            # the whole batch refused (a 401, a 413, ...)
            raise ReplayRefused(str(body["error"].get("message")), body["error"])
        if not isinstance(body, list) or not all(isinstance(r, dict) and r.get("jsonrpc") == "2.0" for r in body):
            raise NotAGateway(url, resp.status_code, resp.headers.get("content-type", "").split(";")[0].strip())
        self.answered = True
        by_id = {r.get("id"): r for r in body}
        out = []
        for call in payload:
            r = by_id[call["id"]]
            if "error" in r:
                raise ReplayRefused(f"{call['method']} failed: {r['error']['message']}", r["error"])
            out.append(r["result"])
        return out

    def call(self, method: str, params: dict[str, Any]) -> Any:
        return self.batch([(method, params)])[0]


def replay(path: Path | str, url: str, *, token: str | None = None, inject: bool = False, realm: str | None = None,
           limit: int | None = None, progress: Any = None) -> ReplayReport:
    """Run the replay. ``progress`` is an optional ``rich.progress.Progress``. Raises ``ValueError`` for a
    file that is not a LoCoMo file or a ``limit`` below 1 (before anything is written), :class:`ReplayRefused` (a
    ``RuntimeError``) when the gateway refuses a call, and :class:`~meta_memory.sdk.transport.GatewayUnreachable` (or its
    :class:`~meta_memory.sdk.transport.NotAGateway`) when no gateway answers at ``url``."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a whole number of conversations, at least 1 (got {limit!r})")
    samples = load_conversations(path)[:limit]
    rpc = _Rpc(url, token)
    report = ReplayReport()
    total_turns = sum(len(_turns(s)) for s in samples)
    total_q = sum(1 for s in samples for q in s.get("qa", []) if q.get("category") in CATEGORIES)
    if not total_q:  # refused before anything is written: there would be nothing to score
        raise ValueError(f"{path}: no question of a scored category "
                         f"({', '.join(f'{c} {name}' for c, name in CATEGORIES.items())}): nothing to replay")
    t_write = progress.add_task("remember turns", total=total_turns) if progress else None
    t_ask = progress.add_task("ask questions", total=total_q) if progress else None
    extra = {"realm": realm} if realm is not None else {}  # an empty one is the gateway's to refuse
    for sample in samples:
        identity = f"locomo:{sample['sample_id']}"
        turns = _turns(sample)
        id_of: dict[str, str] = {}
        start = time.perf_counter()
        for i in range(0, len(turns), WRITE_CHUNK):
            chunk = turns[i:i + WRITE_CHUNK]
            out = rpc.call("meta/agent_memory/remember_batch",
                           {"identity": identity, "records": [{"title": t, "body": b} for _, t, b in chunk], **extra})
            for (dia, _, _), res in zip(chunk, out["results"], strict=True):
                if "error" in res:
                    raise ReplayRefused(f"meta/agent_memory/remember_batch refused turn {dia}: "
                                        f"{res['error']['message']}", res["error"])
                id_of[res["memory_id"]] = dia
            if progress:
                progress.advance(t_write, len(chunk))
        report.remember_seconds += time.perf_counter() - start
        report.turns += len(turns)
        known = set(id_of.values())
        session = f"replay-{sample['sample_id']}"
        if inject:
            rpc.call("meta/session/note", {"identity": identity, "session_key": session, **extra})
        for qa in sample.get("qa", []):
            cat = qa.get("category")
            if cat not in CATEGORIES:
                continue
            if progress:
                progress.advance(t_ask)
            evidence = _evidence(qa.get("evidence", []), known, report)
            if not evidence:
                report.skipped_questions += 1
                continue
            report.questions[cat] += 1
            t0 = time.perf_counter()
            got = rpc.call("meta/agent_memory/recall", {"identity": identity, "query_text": qa["question"],
                                                        "max_entries": max(KS), **extra})
            report.recall_ms.append((time.perf_counter() - t0) * 1000)
            ranked = [id_of.get(r["memory_id"]) for r in got["records"]]
            for k in KS:
                if evidence & set(ranked[:k]):
                    report.hits[cat][k] += 1
            if inject:
                t0 = time.perf_counter()
                block = rpc.call("meta/turn/inject", {"identity": identity, "session_key": session,
                                                      "query_text": qa["question"], "surface": "turn", **extra})
                report.inject_ms.append((time.perf_counter() - t0) * 1000)
                report.inject_questions += 1
                if block.get("text"):
                    report.inject_bytes.append(block["rendered_bytes"])
                    if evidence & {id_of.get(i) for i in block["included_ids"]}:
                        report.inject_hits += 1
                else:
                    report.inject_skips[block.get("skip_reason") or "none"] += 1
                # each question stands for a fresh turn of a long conversation whose context was compacted
                rpc.call("meta/session/compacted", {"identity": identity, "session_key": session, **extra})
    return report
