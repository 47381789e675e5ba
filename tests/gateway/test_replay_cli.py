"""``meta-memory replay`` writes a conversation through ``remember_batch`` and scores recall."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from meta_memory.replay import replay
from support import DroppingFront, realm_db


def _sample() -> list[dict[str, Any]]:
    turns = [{"speaker": "Ana" if i % 2 else "Ben", "dia_id": f"D1:{i}", "text": f"turn {i} mentions topic{i}"}
             for i in range(1, 601)]
    turns[10]["text"] = "We moved the backups to S3 last week"
    return [{
        "sample_id": "t1",
        "conversation": {"speaker_a": "Ana", "speaker_b": "Ben", "session_1": turns,
                         "session_1_date_time": "1:00 pm on 8 May, 2023"},
        "qa": [{"question": "Where are the backups now? S3?", "evidence": ["D1:11"], "category": 4},
               {"question": "What about topic300?", "evidence": ["D1:300"], "category": 4}],
    }]


def test_replay_uses_the_bulk_write(gateway: Any, tmp_path: Path) -> None:
    data = tmp_path / "conv.json"
    data.write_text(json.dumps(_sample()), encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-m", "meta_memory.cli", "replay", str(data), "--url", gateway.url, "--json"],
        capture_output=True, text=True, timeout=300, env=os.environ.copy(), check=True,
    )
    report = json.loads(out.stdout)
    assert report["turns"] == 600 and report["questions"] == 2
    assert report["recall_at"]["overall"]["1"] == 1.0
    conn = sqlite3.connect(f"file:{realm_db(gateway.state_dir)}?mode=ro", uri=True)
    try:
        records = conn.execute("SELECT count(*) FROM records WHERE scope_key = 'locomo:t1'").fetchone()[0]
        calls = conn.execute("SELECT count(DISTINCT stage_token) FROM audit WHERE op_kind = 'create'").fetchone()[0]
    finally:
        conn.close()
    assert records == 600
    assert calls == 2  # 512 + 88 turns: two remember_batch transactions


def test_replay_in_a_realm_keeps_its_injection_session_in_that_realm(gateway: Any, tmp_path: Path) -> None:
    sample = _sample()
    # the same question twice: the session is compacted after each, so the second injects the turn again
    sample[0]["qa"] = [sample[0]["qa"][0], dict(sample[0]["qa"][0])]
    data = tmp_path / "conv.json"
    data.write_text(json.dumps(sample), encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-m", "meta_memory.cli", "replay", str(data), "--url", gateway.url, "--json", "--inject",
         "--realm", "ops"],
        capture_output=True, text=True, timeout=300, env=os.environ.copy(), check=True,
    )
    report = json.loads(out.stdout)
    assert report["inject"]["questions"] == 2 and report["inject"]["evidence_in_block"] == 1.0
    assert report["inject"]["skip_reasons"] == {}
    assert not realm_db(gateway.state_dir).exists()
    conn = sqlite3.connect(f"file:{gateway.state_dir / 'session-state.db'}?mode=ro", uri=True)
    try:
        assert {r[0] for r in conn.execute("SELECT realm FROM session_identities")} == {"ops"}
    finally:
        conn.close()


def test_replay_percentiles_are_nearest_rank(gateway: Any, tmp_path: Path) -> None:
    """The report's percentiles are the project's one definition, nearest rank: the sorted samples' item
    at index round(p / 100 * (n - 1)). Of two injected blocks, p50 is the smaller (index 0), p90 the larger."""
    turns = [{"speaker": "Ana", "dia_id": "D1:1", "text": "The boat is red."},
             {"speaker": "Ben", "dia_id": "D1:2", "text": "The garden shed holds the long ladder, the blue paint "
                                                          "tins, the lawn mower and three folding chairs."}]
    sample = [{"sample_id": "pct", "conversation": {"speaker_a": "Ana", "speaker_b": "Ben", "session_1": turns,
                                                    "session_1_date_time": "1:00 pm on 8 May, 2023"},
               "qa": [{"question": "What colour is the boat?", "evidence": ["D1:1"], "category": 4},
                      {"question": "What does the garden shed hold?", "evidence": ["D1:2"], "category": 4}]}]
    data = tmp_path / "conv.json"
    data.write_text(json.dumps(sample), encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-m", "meta_memory.cli", "replay", str(data), "--url", gateway.url, "--json", "--inject",
         "--realm", "pct"],
        capture_output=True, text=True, timeout=300, env=os.environ.copy(), check=True,
    )
    sizes = json.loads(out.stdout)["inject"]["block_bytes"]
    assert sizes["p50"] is not None and sizes["p50"] < sizes["max"], sizes  # two different blocks
    assert sizes["p90"] == sizes["max"], sizes


def _replay(path: Path, url: str, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", "replay", str(path), "--url", url, *extra],
                          capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})})


BAD_FILES = {
    "not JSON": ("garbage", "is not JSON"),
    "empty": ("", "is not JSON"),
    "an object": ('{"a": 1}', "expected a JSON list of LoCoMo samples, not an object"),
    "a list of numbers": ("[1, 2]", "sample 1: expected an object, not a number"),
    "no conversation": ('[{"sample_id": "x"}]', "sample 1 (x): 'conversation' must be an object"),
    "a conversation that is a number": ('[{"sample_id": "x", "conversation": 5}]',
                                        "sample 1 (x): 'conversation' must be an object"),
    "a turn without dia_id": ('[{"sample_id": "x", "conversation": {"session_1": [{"speaker": "A", "text": "hi"}]}}]',
                              "sample 1 (x): session_1 turn 1: 'dia_id' must be a string"),
    "qa not a list": ('[{"sample_id": "x", "conversation": {"session_1": []}, "qa": 3}]',
                      "sample 1 (x): 'qa' must be a list"),
}


def test_a_file_that_is_not_a_locomo_file_is_one_line_naming_it(gateway: Any, tmp_path: Path) -> None:
    for name, (text, needle) in BAD_FILES.items():
        data = tmp_path / "bad.json"
        data.write_text(text, encoding="utf-8")
        out = _replay(data, gateway.url)
        assert out.returncode == 1, (name, out.stderr)
        assert "Traceback" not in out.stderr, (name, out.stderr)
        assert out.stderr.startswith(f"meta-memory: {data}: ") and needle in out.stderr, (name, out.stderr)
    assert gateway.result("meta/memory/panel/records", {})["records"] == []  # nothing was written


def test_a_gateway_that_cannot_be_used_is_one_line_naming_why(gateway_factory: Any, tmp_path: Path) -> None:
    from meta_memory.access.config import hash_token
    from support import write_config

    data = tmp_path / "conv.json"
    data.write_text(json.dumps(_sample()), encoding="utf-8")
    unreachable = _replay(data, "http://127.0.0.1:9")
    assert unreachable.returncode == 1 and "Traceback" not in unreachable.stderr
    assert "cannot reach the meta-memory gateway at http://127.0.0.1:9/rpc" in unreachable.stderr
    cfg = write_config(tmp_path / "a.toml", f'[[access.tokens]]\nsha256 = "{hash_token("replay-tok-1")}"\n'
                                            'principal = "ops"\n')
    gw = gateway_factory(tmp_path / "state", config=cfg)
    anonymous = _replay(data, gw.url)
    assert anonymous.returncode == 1 and "Traceback" not in anonymous.stderr
    assert "authentication failed: a bearer token is required" in anonymous.stderr
    assert _replay(data, gw.url, "--json", env={"META_MEMORY_TOKEN": "replay-tok-1"}).returncode == 0


def test_a_file_with_no_scored_question_is_refused_before_anything_is_written(gateway: Any, tmp_path: Path) -> None:
    """Nothing to score is a refusal naming the file, not a table of recall 0.000 (and no turn is written)."""
    sample = _sample()
    sample[0]["qa"] = [{"question": "Adversarial?", "evidence": ["D1:11"], "category": 5}]
    data = tmp_path / "conv.json"
    data.write_text(json.dumps(sample), encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "meta_memory.cli", "replay", str(data), "--url", gateway.url],
                         capture_output=True, text=True, timeout=300, env=os.environ.copy())
    assert out.returncode == 1, out
    assert "no question of a scored category" in out.stderr and "nothing to replay" in out.stderr
    assert "0.000" not in out.stdout
    assert _replayed_rows(gateway) == 0


def test_a_category_without_questions_reads_n_a() -> None:
    from meta_memory.replay import ReplayReport

    report = ReplayReport()
    report.questions[4] = 2
    report.hits[4][1] = 1
    figures = report.to_dict()["recall_at"]
    assert figures["single-hop"][1] == 0.5 and figures["overall"][1] == 0.5
    assert figures["multi-hop"][1] is None  # no multi-hop question: not a recall of 0


def test_a_gateway_that_stops_in_the_middle_of_a_call_is_not_called_an_https_gateway(gateway: Any,
                                                                                    tmp_path: Path) -> None:
    """The gateway answered the replay's writes, then closed the connection of a recall without answering
    (stopped or restarted): the replay says the call may or may not have been applied, not "try https"."""
    data = tmp_path / "conv.json"
    data.write_text(json.dumps(_sample()), encoding="utf-8")
    front = DroppingFront(gateway.url, method="meta/agent_memory/recall")
    front.drop = True
    try:
        out = _replay(data, front.url)
    finally:
        front.close()
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert "closed the connection without answering" in out.stderr, out.stderr
    assert "may or may not have been applied" in out.stderr and "HTTPS" not in out.stderr, out.stderr


def test_a_limit_below_one_or_an_empty_realm_is_refused_before_anything_is_written(gateway: Any,
                                                                                   tmp_path: Path) -> None:
    """``--limit 0`` used to replay every conversation and ``--limit -3`` all but the last three (a slice
    from the end), and an empty ``--realm`` wrote into the default realm: each is refused, nothing written."""
    data = tmp_path / "conv.json"
    data.write_text(json.dumps(_sample()), encoding="utf-8")
    for args, said in ((["--limit", "0"], "Invalid value for '--limit': 0 is not in the range x>=1"),
                       (["--limit", "-3"], "Invalid value for '--limit': -3 is not in the range x>=1"),
                       (["--realm", ""], "realm must be a non-empty string")):
        out = subprocess.run([sys.executable, "-m", "meta_memory.cli", "replay", str(data), "--url", gateway.url,
                              *args], capture_output=True, text=True, timeout=300, env=os.environ.copy())
        assert out.returncode in (1, 2) and said in out.stderr, (args, out)
        assert "0.000" not in out.stdout and "1.000" not in out.stdout, (args, out.stdout)
    assert _replayed_rows(gateway) == 0


def test_the_replay_function_refuses_a_limit_below_one(tmp_path: Path) -> None:
    data = tmp_path / "conv.json"
    data.write_text(json.dumps(_sample()), encoding="utf-8")
    for limit in (0, -1):
        with pytest.raises(ValueError, match="limit must be a whole number of conversations, at least 1"):
            replay(data, "http://127.0.0.1:1", limit=limit)


def _replayed_rows(gateway: Any) -> int:
    """Rows the replay wrote for the sample's conversation (``locomo:t1``), read from the realm's file."""
    db = realm_db(gateway.state_dir)
    if not db.exists():
        return 0
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM records WHERE scope_key = 'locomo:t1'").fetchone()[0])
    finally:
        conn.close()
