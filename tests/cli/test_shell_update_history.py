"""``meta-memory update`` and ``meta-memory history``, and refusals naming what the user typed.

Driven as a user would: the installed command in a subprocess, against a real gateway over HTTP (with and
without a bearer token's grants) and embedded on a state directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from meta_memory.access.config import hash_token
from support import write_config

pytestmark = pytest.mark.gateway

ID = "lead:main"
TOKEN = "tok-shell-update-0123456789"


def mm(*args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], input=stdin, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "400", **(env or {})})


def as_json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_update_writes_a_new_version_and_history_lists_both_in_order(gateway: Any) -> None:
    url = ["--url", gateway.url, "--identity", ID]
    made = as_json(mm("remember", "Parking spot", "Level 2, bay 14.", "--tag", "car", *url, "--json"))
    first = made["memory_id"]

    updated = as_json(mm("update", first, "--body", "Level 3, bay 7.", *url, "--json"))
    second = updated["memory_id"]
    assert second != first and updated["supersedes"] == first
    assert (updated["record"]["title"], updated["record"]["body"], updated["record"]["tags"]) == (
        "Parking spot", "Level 3, bay 7.", ["car"])  # only the body was sent: the rest is kept
    # the gateway holds the new version: a plain RPC recall finds it, not the old one
    found = gateway.result("meta/agent_memory/recall", {"identity": ID, "query_text": "parking"})["records"]
    assert [(r["memory_id"], r["body"]) for r in found] == [(second, "Level 3, bay 7.")]

    shown = as_json(mm("history", first, *url, "--json"))
    assert [(v["memory_id"], v["reason"], v["status"]) for v in shown["versions"]] == [
        (first, "created", "superseded"), (second, "update", "active")]
    assert shown["versions"][1]["supersedes"] == first and shown["order"] == "oldest_first"
    # naming the newer version lists the same history
    assert as_json(mm("history", second, *url, "--json"))["versions"] == shown["versions"]

    table = mm("history", second, *url)
    assert table.returncode == 0, table.stderr
    assert "2 versions, oldest first" in table.stdout
    rows = [line for line in table.stdout.splitlines() if line.startswith("│")]
    assert len(rows) == 2 and first in rows[0] and "created" in rows[0] and "superseded" in rows[0]
    assert second in rows[1] and "update" in rows[1] and "active" in rows[1]

    said = mm("update", second, "--title", "Where the car is", "--tag", "car", "--tag", "work", *url)
    assert said.returncode == 0, said.stderr
    assert f"supersedes {second}" in said.stdout and "Where the car is" in said.stdout and "car, work" in said.stdout
    same = mm("update", as_json(mm("list", *url, "--json"))[0]["memory_id"], "--title", "Where the car is", *url)
    assert same.returncode == 0 and "nothing changed" in same.stdout, same


def test_history_shows_when_and_by_whom_a_version_was_forgotten(gateway: Any) -> None:
    """A forget writes no version: the table showed the record's last version ``tombstoned`` but not when
    or by whom; the version's later changes now follow it, a line each (``--json`` always had them)."""
    url = ["--url", gateway.url, "--identity", ID]
    made = as_json(mm("remember", "Gym locker", "Code 4412.", *url, "--json"))["memory_id"]
    assert mm("forget", made, *url).returncode == 0
    changes = as_json(mm("history", made, *url, "--json"))["versions"][0]["changes"]
    assert [c["change"] for c in changes] == ["created", "forget"]
    table = mm("history", made, *url)
    assert table.returncode == 0, table.stderr
    rows = [line for line in table.stdout.splitlines() if line.startswith("│")]
    assert len(rows) == 2, table.stdout
    assert made in rows[0] and "created" in rows[0] and "tombstoned" in rows[0]
    forgot = [cell.strip() for cell in rows[1].strip("│").split("│")]
    when = datetime.fromtimestamp(changes[1]["at_ms"] / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
    assert forgot[:4] == ["", "forget", when, "application"], rows[1]


def test_update_refusals_are_the_gateways_exit_1(gateway: Any) -> None:
    url = ["--url", gateway.url, "--identity", ID]
    made = as_json(mm("remember", "Gym locker", "Code 4412.", *url, "--json"))

    unknown = mm("update", "mem-does-not-exist", "--title", "x", *url)
    rpc = gateway.error("meta/agent_memory/update", {"identity": ID, "memory_id": "mem-does-not-exist", "title": "x"})
    assert unknown.returncode == 1 and unknown.stdout == ""
    assert f"refused ({rpc['data']['kind']}): {rpc['message']}" in unknown.stderr
    refused = mm("update", "mem-does-not-exist", "--title", "x", *url, "--json")
    assert refused.returncode == 1 and json.loads(refused.stdout) == {"error": rpc}
    # another identity's record is no record of this one: told exactly as an unknown id
    elsewhere = mm("update", made["memory_id"], "--title", "x", "--url", gateway.url, "--identity", "lead:other")
    assert elsewhere.returncode == 1
    assert elsewhere.stderr.replace(made["memory_id"], "ID") == unknown.stderr.replace("mem-does-not-exist", "ID")
    history = mm("history", "mem-does-not-exist", *url)
    assert history.returncode == 1 and "not_found" in history.stderr and "mem-does-not-exist" in history.stderr

    # nothing to change: a usage error (exit 2, as --tag with --clear-tags), in the options' names, before any call
    nothing = mm("update", made["memory_id"], *url)
    assert nothing.returncode == 2
    assert "give at least one of --title, --body, --tag, --clear-tags, --metadata, --ttl-s, --clear-expiry" \
        in nothing.stderr
    # two exclusive options: a usage error before anything is sent, worded as every such pair is
    for pair in (["--ttl-s", "60", "--clear-expiry"], ["--tag", "x", "--clear-tags"]):
        both = mm("update", made["memory_id"], *pair, *url)
        named = f"give {pair[0]} or {pair[-1]}, not both"
        assert both.returncode == 2 and f"Error: {named}\n" in both.stderr, both.stderr
        assert "true" not in both.stderr and "exclusive" not in both.stderr
    assert as_json(mm("list", *url, "--json"))[0]["memory_id"] == made["memory_id"]  # nothing was written


def test_update_and_history_of_an_identity_the_token_has_no_grant_on(tmp_path: Path, gateway_factory: Any) -> None:
    cfg = write_config(tmp_path / "access.toml", "\n".join([
        "[access]", "enabled = true", "",
        "[[access.tokens]]", f'sha256 = "{hash_token(TOKEN)}"', 'principal = "shell-user"', "",
        *[line for action in ("agent.memory.write", "agent.memory.read", "agent.view")
          for line in ("[[access.grants]]", f'action = "{action}"', 'who = { principal = "shell-user" }',
                       f'on = {{ identity = "{ID}" }}', "")],
    ]))
    gw = gateway_factory(tmp_path / "state", config=cfg)
    env = {"META_MEMORY_TOKEN": TOKEN}
    mine = as_json(mm("remember", "Spare key", "Under the mat.", "--url", gw.url, "--identity", ID, "--json", env=env))
    updated = as_json(mm("update", mine["memory_id"], "--body", "With the neighbour.", "--url", gw.url, "--identity",
                         ID, "--json", env=env))
    assert updated["supersedes"] == mine["memory_id"]

    for command in (["update", mine["memory_id"], "--title", "stolen"], ["history", mine["memory_id"]]):
        other = mm(*command, "--url", gw.url, "--identity", "lead:other", env=env)
        assert other.returncode == 1 and "access_denied" in other.stderr, other
        anonymous = mm(*command, "--url", gw.url, "--identity", ID)
        assert anonymous.returncode == 1 and "access_denied" in anonymous.stderr
        assert "no bearer token was sent" in anonymous.stderr
    versions = as_json(mm("history", mine["memory_id"], "--url", gw.url, "--identity", ID, "--json", env=env))["versions"]
    assert [v["title"] for v in versions] == ["Spare key", "Spare key"]  # the refused update wrote nothing


def test_hostile_text_in_a_title_is_shown_escaped(gateway: Any) -> None:
    url = ["--url", gateway.url, "--identity", ID]
    made = as_json(mm("remember", "Plain", "A body.", *url, "--json"))
    hostile = "[red]alert[/red] \x1b[31mRED\x1b[0m \u202eevil"
    updated = mm("update", made["memory_id"], "--title", hostile, *url)
    shown = mm("history", made["memory_id"], *url)
    for out in (updated, shown):
        assert out.returncode == 0, out.stderr
        assert "[red]alert[/red]" in out.stdout and "\\x1b[31mRED\\x1b[0m" in out.stdout and "\\u202eevil" in out.stdout
        for ch in ("\x1b", "\u202e"):
            assert ch not in out.stdout
    dumped = mm("history", made["memory_id"], *url, "--json")
    assert "\x1b" not in dumped.stdout and json.loads(dumped.stdout)["versions"][1]["title"] == hostile


def test_update_and_history_embedded_on_a_state_dir(tmp_path: Path) -> None:
    where = ["--state-dir", str(tmp_path / "state"), "--identity", ID]
    made = as_json(mm("remember", "Bike lock", "Code 1234.", "--tag", "bike", "--metadata", '{"n": 1}', *where,
                      "--json"))
    updated = as_json(mm("update", made["memory_id"], "--body", "-", "--clear-tags", "--metadata", '{"n": 2}', *where,
                         "--json", stdin="Code 9876."))
    assert (updated["record"]["body"], updated["record"]["tags"], updated["record"]["metadata"]) == (
        "Code 9876.", [], {"n": 2})
    versions = as_json(mm("history", updated["memory_id"], *where, "--json"))["versions"]
    assert [v["memory_id"] for v in versions] == [made["memory_id"], updated["memory_id"]]
    assert [v["metadata"] for v in versions] == [{"n": 1}, {"n": 2}]
    clash = mm("update", updated["memory_id"], "--tag", "x", "--clear-tags", *where)
    assert clash.returncode == 2 and "--tag or --clear-tags" in clash.stderr
    # the other clash and an update that names no change are usage errors too (exit 2), said in the options' words
    expiry = mm("update", updated["memory_id"], "--ttl-s", "60", "--clear-expiry", *where)
    assert expiry.returncode == 2 and "give --ttl-s or --clear-expiry, not both" in expiry.stderr, expiry.stderr
    nothing = mm("update", updated["memory_id"], *where)
    assert nothing.returncode == 2 and "give at least one of --title, --body" in nothing.stderr, nothing.stderr
    assert as_json(mm("history", updated["memory_id"], *where, "--json"))["versions"] == versions


def test_a_refusal_names_the_argument_or_option_typed(gateway: Any) -> None:
    url = ["--url", gateway.url, "--identity", ID]
    long_query = mm("recall", "word " * 4000, *url)
    assert long_query.returncode == 1
    assert "QUERY must be at most 16384 bytes" in long_query.stderr and "query_text must" not in long_query.stderr
    many_tags = mm("remember", "t", "b", *[a for i in range(33) for a in ("--tag", f"t{i}")], *url)
    assert many_tags.returncode == 1 and "--tag must contain at most 32 entries" in many_tags.stderr
    # one value of a repeated option is named by its place among them (the RPC's tags.1 is the second --tag)
    long_tag = mm("remember", "t", "b", "--tag", "ok", "--tag", "x" * 65, *url)
    assert long_tag.returncode == 1 and "--tag #2 must be at most 64 bytes [field=tags.1]" in long_tag.stderr
    hidden_tag = mm("remember", "t", "b", "--tag", "ok", "--tag", "x\ue000", *url)  # every rule of one tag
    assert hidden_tag.returncode == 1 and "--tag #2 must not contain private-use" in hidden_tag.stderr, hidden_tag.stderr
    blank_tag = mm("remember", "t", "b", "--tag", "ok", "--tag", " ", *url)  # a blank one too, by its place
    assert blank_tag.returncode == 1 and "--tag #2 must not be empty [field=tags.1]" in blank_tag.stderr, blank_tag.stderr
    blank_filter = mm("list", "--tag", "", *url)
    assert blank_filter.returncode == 1 and "--tag #1 must not be empty" in blank_filter.stderr, blank_filter.stderr
    listed = mm("list", "--tag", "x" * 65, *url)
    assert listed.returncode == 1 and "--tag #1 must be at most 64 bytes" in listed.stderr, listed.stderr
    empty_title = mm("remember", "", "b", *url)
    assert empty_title.returncode == 1 and "TITLE must not be empty" in empty_title.stderr
    bad_filter = mm("recall", "x", "--filter", '{"a": {"$foo": 1}}', *url)
    assert bad_filter.returncode == 1 and '--filter operator "$foo" is not supported' in bad_filter.stderr
    no_id = mm("update", "", "--title", "x", *url)
    assert no_id.returncode == 1 and "MEMORY_ID must not be empty" in no_id.stderr
    # --json keeps the JSON-RPC error as the gateway answered it: the RPC's field names
    wire = mm("recall", "word " * 4000, *url, "--json")
    error = json.loads(wire.stdout)["error"]
    assert error["data"]["field"] == "query_text" and "query_text must be at most 16384 bytes" in error["message"]
