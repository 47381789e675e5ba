"""PostgreSQL recall over RPC when its FIRST ranking round cannot finish inside its share of the budget.

An identity of 20,000 records, seven in ten holding all of 64 common words, and a recall asking for all 64:
the first round (the rows holding two of the rarest words) must score those 14,000 rows with 64 terms a row,
longer than the whole of a 300 ms budget (``recall_timeout_ms``), far longer than the first round's share. The gateway answers
anyway, inside the budget, from a sample of that round's match scored with every word, and says so
(``degraded_reason`` ``approximate_ranking``, counted in ``meta_memory_recall_degraded_total``) instead of
failing with ``timeout`` (a machine loaded by other work may still pass a budget this short now and then:
a few such answers are retried, while a recall without the sample would never answer inside it). The sample never holds another identity's records, nor forgotten ones.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from extras import require_extra

psycopg = require_extra("postgres", "psycopg")  # before the modules that import it

from contract.pgsupport import dsn_with_schema
from support import GatewayProcess, start_gateway, write_config

pytestmark = [pytest.mark.gateway, pytest.mark.postgres]

ME, OTHER = "lead:main", "scout:other"
N = 20_000
BUDGET_MS = 300
WORDS = [f"w{c}{d}" for c in "abcdefgh" for d in "klmnprst"]  # 64 words: the most a query keeps


def _body(i: int) -> str:
    """Seven records in ten hold every word, each once to three times (the mix shifts with ``i``); each
    record holds two rarer words."""
    held = [w for j, w in enumerate(WORDS) if i % 10 < 7 for _ in range(1 + (i // 10 + j) % 3)]
    return " ".join(held) + f" item{i % 997} part{i % 89}"


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, set[str], set[str]]]:
    """``(gateway, ids of ME's live records, ids of records that must never be recalled for ME)``: the other
    identity's records (written first, every word many times) and ME's first records, forgotten."""
    from contract.pgsupport import require_postgres, throwaway_schema

    require_postgres()
    tmp = tmp_path_factory.mktemp("pg-first-round")
    with throwaway_schema() as schema:
        config = write_config(tmp / "gateway.toml", "[agent_memory]\nstore = \"postgres\"\n"
                              f"dsn = \"{dsn_with_schema(schema)}\"\nrecall_timeout_ms = {BUDGET_MS}\n")
        gw = start_gateway(tmp / "state", config=config)
        try:
            def batch(identity: str, items: list[dict[str, Any]]) -> list[str]:
                out = gw.result("meta/agent_memory/remember_batch", {"identity": identity, "records": items},
                                timeout=300)
                assert not [r for r in out["results"] if r.get("error")]
                return [r["memory_id"] for r in out["results"]]

            banned = set(batch(OTHER, [{"title": f"Other {i}", "body": " ".join(WORDS * 3) + f" other{i}"}
                                       for i in range(300)]))
            mine: list[str] = []
            for lo in range(0, N, 1000):
                mine += batch(ME, [{"title": f"Note {i}", "body": _body(i)} for i in range(lo, lo + 1000)])
            for mid in mine[:300]:
                gw.result("meta/agent_memory/forget", {"identity": ME, "memory_id": mid})
            banned |= set(mine[:300])
            yield gw, set(mine[300:]), banned
        finally:
            gw.stop()


def _recall(gw: GatewayProcess, query: str, identity: str = ME) -> tuple[dict[str, Any], float]:
    started = time.monotonic()
    body = gw.rpc("meta/agent_memory/recall", {"identity": identity, "query_text": query, "max_entries": 8},
                  timeout=60)
    return body, time.monotonic() - started


def test_a_first_round_past_its_share_answers_approximately_not_timeout(
        loaded: tuple[GatewayProcess, set[str], set[str]]) -> None:
    gw, live, banned = loaded
    before = _degraded(gw)
    answered, timeouts = 0, []
    while answered < 3:
        body, took = _recall(gw, " ".join(WORDS))
        assert took < 5, took
        if "error" in body and body["error"].get("data", {}).get("reason") == "timeout":
            # A machine loaded by other work can pass the 90 ms the budget keeps after the sample; without the
            # sample the first round (longer than the whole budget) would end every try this way.
            timeouts.append(body)
            assert len(timeouts) <= 5, timeouts
            continue
        assert "result" in body, body
        out = body["result"]
        assert out.get("degraded_reason") == "approximate_ranking", out
        ids = [r["memory_id"] for r in out["records"]]
        assert len(ids) == 8
        assert set(ids) <= live and not set(ids) & banned  # ME's live records only
        answered += 1
    assert _degraded(gw) >= before + 3


def test_a_query_the_first_round_settles_stays_exact(loaded: tuple[GatewayProcess, set[str], set[str]]) -> None:
    gw, live, _ = loaded
    body, _ = _recall(gw, "item5 part7")  # rarer words: the first rounds are short, the answer exact
    out = body["result"]
    assert "degraded_reason" not in out, out
    assert out["records"] and {r["memory_id"] for r in out["records"]} <= live
    assert all("item5 " in r["body"] or "part7" in r["body"] for r in out["records"])
    other, _ = _recall(gw, " ".join(WORDS), identity=OTHER)  # 300 rows: the first round settles it
    assert "degraded_reason" not in other["result"] and len(other["result"]["records"]) == 8


def _degraded(gw: GatewayProcess) -> float:
    text = httpx.get(gw.url + "/metrics", timeout=10).text
    found = re.search(r'^meta_memory_recall_degraded_total\{reason="approximate_ranking"\} (\S+)$', text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0

