"""``meta-memory remember | recall | forget | list``: agent memory from the shell.

Driven as a user would: the installed command in a subprocess, against a real gateway over HTTP
(with and without a bearer token) and embedded on a state directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from meta_memory.access.config import hash_token
from support import write_config

pytestmark = pytest.mark.gateway

ID = "lead:main"
TOKEN = "tok-shell-user-0123456789"


def mm(*args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], input=stdin, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "200", **(env or {})})


def as_json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_remember_recall_list_forget_over_a_gateway(gateway: Any) -> None:
    url = ["--url", gateway.url, "--identity", ID]
    made = as_json(mm("remember", "Passport location", "Top drawer of the desk.", "--tag", "travel", *url, "--json"))
    assert made["title"] == "Passport location" and made["tags"] == ["travel"]
    # the record is really in the gateway: a plain RPC recall sees it
    rpc = gateway.rpc("meta/agent_memory/recall", {"identity": ID, "query_text": "passport"})
    assert [r["memory_id"] for r in rpc["result"]["records"]] == [made["memory_id"]]

    found = as_json(mm("recall", "where is my passport?", *url, "--json"))["records"]
    assert [r["memory_id"] for r in found] == [made["memory_id"]]
    table = mm("recall", "where is my passport?", *url)
    assert table.returncode == 0 and made["memory_id"] in table.stdout and "Top drawer" in table.stdout

    listed = as_json(mm("list", *url, "--json"))
    assert [m["memory_id"] for m in listed] == [made["memory_id"]]

    gone = as_json(mm("forget", made["memory_id"], *url, "--json"))
    assert gone == {"memory_id": made["memory_id"], "deleted": True}
    again = mm("forget", made["memory_id"], *url)  # already forgotten: nothing to do, not an error
    assert again.returncode == 0 and "already forgotten (nothing changed)" in again.stdout, again
    assert as_json(mm("forget", made["memory_id"], *url, "--json")) == {"memory_id": made["memory_id"], "deleted": False}
    # another identity's record is no such record for this one: told exactly as an unknown id
    elsewhere = mm("forget", made["memory_id"], "--url", gateway.url, "--identity", "lead:other")
    unknown = mm("forget", "mem-does-not-exist", "--url", gateway.url, "--identity", "lead:other")
    assert elsewhere.returncode == unknown.returncode == 1
    assert elsewhere.stderr.replace(made["memory_id"], "ID") == unknown.stderr.replace("mem-does-not-exist", "ID")
    assert as_json(mm("recall", "passport", *url, "--json")) == {"records": [], "skip_reason": None}
    assert "does not match" not in mm("recall", "passport", *url).stdout


def test_body_from_stdin_and_other_identities_stay_apart(gateway: Any) -> None:
    body = "Line one.\nLine two of a body piped in."
    made = as_json(mm("remember", "Piped", "-", "--url", gateway.url, "--identity", ID, "--json", stdin=body))
    assert made["body"] == body
    other = as_json(mm("recall", "piped body", "--url", gateway.url, "--identity", "lead:other", "--json"))["records"]
    assert other == []


def test_refusals_exit_non_zero_with_a_clear_message(gateway: Any) -> None:
    url = ["--url", gateway.url, "--identity", ID]
    secret = mm("remember", "keys", "aws AKIAIOSFODNN7EXAMPLE", *url)
    assert secret.returncode == 1 and "secret_detected" in secret.stderr and "AKIAIOSFODNN7EXAMPLE" not in secret.stderr
    empty = mm("remember", "t", "b", "--url", gateway.url, "--identity", " ")
    assert empty.returncode == 1 and "identity" in empty.stderr
    unknown = mm("forget", "mem-does-not-exist", *url)  # no such record: refused, as update refuses it
    assert unknown.returncode == 1 and "not_found" in unknown.stderr and "mem-does-not-exist" in unknown.stderr
    assert "nothing changed" not in unknown.stdout
    k = mm("recall", "x", *url, "-k", "0")
    assert k.returncode == 2  # usage error: -k is 1..64
    both = mm("list", "--url", gateway.url, "--state-dir", "somewhere", "--identity", ID)
    assert both.returncode == 2 and "give --url or --state-dir, not both" in both.stderr


def test_unreachable_gateway_is_one_line_exit_1() -> None:
    proc = mm("recall", "x", "--url", "http://127.0.0.1:9", "--identity", ID)
    assert proc.returncode == 1
    assert "cannot reach the meta-memory gateway" in proc.stderr and "Traceback" not in proc.stderr


def test_token_from_the_environment_and_refusal_without_it(tmp_path: Path, gateway_factory: Any) -> None:
    cfg = write_config(tmp_path / "access.toml", "\n".join([
        "[access]", "enabled = true", "",
        "[[access.tokens]]", f'sha256 = "{hash_token(TOKEN)}"', 'principal = "shell-user"', "",
        *[line for action in ("agent.memory.write", "agent.memory.read", "agent.view", "agent.memory.delete")
          for line in ("[[access.grants]]", f'action = "{action}"', 'who = { principal = "shell-user" }',
                       f'on = {{ identity = "{ID}" }}', "")],
    ]))
    gw = gateway_factory(tmp_path / "state", config=cfg)
    url = ["--url", gw.url, "--identity", ID]
    anonymous = mm("remember", "t", "b", *url)
    assert anonymous.returncode == 1 and "access_denied" in anonymous.stderr
    made = as_json(mm("remember", "Door code", "Ask the concierge.", *url, "--json", env={"META_MEMORY_TOKEN": TOKEN}))
    assert as_json(mm("list", *url, "--json", env={"META_MEMORY_TOKEN": TOKEN}))[0]["memory_id"] == made["memory_id"]
    # the token grants lead:main only
    other = mm("recall", "door", "--url", gw.url, "--identity", "lead:other", env={"META_MEMORY_TOKEN": TOKEN})
    assert other.returncode == 1 and "access_denied" in other.stderr


def test_embedded_state_dir_persists_and_refuses_a_dir_a_gateway_holds(tmp_path: Path, gateway_factory: Any) -> None:
    state = tmp_path / "embedded"
    made = as_json(mm("remember", "Plant care", "Water the fern on Sundays.", "--state-dir", str(state),
                      "--identity", ID, "--json"))
    again = as_json(mm("recall", "fern", "--state-dir", str(state), "--identity", ID, "--json"))["records"]
    assert [r["memory_id"] for r in again] == [made["memory_id"]]
    gw = gateway_factory(state)
    held = mm("list", "--state-dir", str(state), "--identity", ID)
    assert held.returncode == 1 and "Traceback" not in held.stderr
    assert gw.rpc("meta/agent_memory/manifest", {"identity": ID, "tier": "full"})["result"]["records"][0]["id"] == made["memory_id"]


def test_erase_from_the_shell(gateway: Any) -> None:
    url = ["--url", gateway.url, "--identity", ID]
    made = as_json(mm("remember", "Old address", "12 Elm Street", *url, "--json"))
    dry = as_json(mm("erase", made["memory_id"], "--dry-run", *url, "--json"))
    assert dry["dry_run"] is True and dry["count"] == 1
    assert "would erase 1 record in identity scope 'lead:main': " + made["memory_id"] in " ".join(
        mm("erase", made["memory_id"], "--dry-run", *url).stdout.split())
    done = mm("erase", made["memory_id"], "--reason", "moved", *url)
    assert done.returncode == 0 and "erased 1 record" in done.stdout
    assert as_json(mm("list", *url, "--json")) == []
    gone = mm("erase", made["memory_id"], *url)
    assert gone.returncode == 1 and "not_found" in gone.stderr
    neither = mm("erase", *url)
    assert neither.returncode == 2 and "give a MEMORY_ID or --all" in neither.stderr
    assert "(not both)" not in neither.stderr  # it gave neither: the message does not speak of both
    both = mm("erase", "mem-x", "--all", *url)
    assert both.returncode == 2 and "give MEMORY_ID or --all, not both" in both.stderr
    as_json(mm("remember", "a", "first", *url, "--json"))
    as_json(mm("remember", "b", "second", *url, "--json"))
    assert as_json(mm("erase", "--all", "--dry-run", *url, "--json"))["count"] == 2
    assert as_json(mm("erase", "--all", "--yes", *url, "--json"))["count"] == 2


def test_bytes_that_are_not_utf8_are_a_usage_error(gateway: Any) -> None:
    proc = subprocess.run([sys.executable, "-m", "meta_memory.cli", "remember", "T", "-", "--identity", ID,
                           "--url", gateway.url], input=b"\xff\xfe not text", capture_output=True, timeout=60)
    assert proc.returncode == 2 and b"not valid UTF-8" in proc.stderr and b"Traceback" not in proc.stderr


def test_commands_run_at_once_on_one_state_dir_take_turns(tmp_path: Path) -> None:
    """Four shell commands started together on one directory all succeed: each waits for the one before."""
    state = str(tmp_path / "shared")
    procs = [subprocess.Popen([sys.executable, "-m", "meta_memory.cli", "remember", f"Note {i}", f"Body number {i}.",
                               "--identity", ID, "--state-dir", state, "--json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(4)]
    outs = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    for proc in procs:
        proc.stdout.close()
        proc.stderr.close()
    assert [rc for rc, _ in outs] == [0] * 4, [err for _, err in outs]
    listed = as_json(mm("list", "--state-dir", state, "--identity", ID, "--json"))
    assert sorted(r["title"] for r in listed) == [f"Note {i}" for i in range(4)]


def test_a_command_that_waited_its_turn_in_vain_says_the_directory_is_busy(tmp_path: Path) -> None:
    """Another shell command holds the directory past the wait: the refusal says the directory is busy
    with shell commands and to retry, not that a gateway runs on it (there is none to call with --url)."""
    from meta_memory.storage.lock import ONE_SHOT_WAIT_S, StateDirLock

    state = tmp_path / "busy"
    other = StateDirLock(state, one_shot=True)  # what a long `meta-memory import --state-dir` holds
    try:
        started = time.monotonic()
        proc = mm("remember", "t", "b", "--state-dir", str(state), "--identity", ID)
        assert time.monotonic() - started >= ONE_SHOT_WAIT_S  # it waited its turn first
    finally:
        other.release()
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"the state directory {state} is busy: another meta-memory command (pid {os.getpid()}) held it" \
           in proc.stderr and "retry" in proc.stderr
    assert "already in use" not in proc.stderr and "--url instead of --state-dir" not in proc.stderr


def test_a_dir_a_gateway_holds_is_refused_at_once_naming_url(tmp_path: Path, gateway_factory: Any) -> None:
    state = tmp_path / "held"
    gateway_factory(state)
    started = time.monotonic()
    held = mm("remember", "t", "b", "--state-dir", str(state), "--identity", ID)
    assert held.returncode == 1 and time.monotonic() - started < 8  # no wait behind a gateway
    assert "already in use" in held.stderr and "--url instead of --state-dir" in held.stderr
    assert "Meta.connect" not in held.stderr


@pytest.mark.parametrize("command", [
    ["list", "--identity", ID],
    ["mcp", "--identity", ID],
    ["replay", __file__],
])
def test_a_url_without_a_scheme_is_a_usage_error_naming_the_rule(command: list[str]) -> None:
    """``--url localhost:8765`` (no ``http://``) is refused before anything runs, exit 2, not a traceback
    or a misleading 'cannot reach'."""
    out = subprocess.run([sys.executable, "-m", "meta_memory.cli", *command, "--url", "localhost:8765"],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 2, out.stderr
    assert "Invalid value for '--url'" in out.stderr and "must start with http:// or https://" in out.stderr
    assert "Traceback" not in out.stderr and "cannot reach" not in out.stderr


def test_a_query_without_searchable_words_says_so(gateway: Any) -> None:
    """``recall "the"`` searches nothing; the shell says why instead of 'no memory matches'."""
    url = ["--url", gateway.url, "--identity", ID]
    as_json(mm("remember", "The plan", "The plan is on the wall.", *url, "--json"))
    for query in ("the", "a ?", ""):
        out = mm("recall", query, *url)
        assert out.returncode == 0 and "nothing searched" in out.stdout and "no searchable word" in out.stdout
    out = mm("recall", "zebra", *url)
    assert out.returncode == 0 and "no memory of lead:main matches 'zebra'" in out.stdout


@pytest.mark.parametrize("command", [["export", "-o", "out.jsonl"], ["backup", "copy"]])
def test_export_and_backup_of_a_state_dir_that_does_not_exist_say_to_check_it(tmp_path: Path,
                                                                              command: list[str]) -> None:
    typo = tmp_path / "stat"
    proc = mm(*[str(tmp_path / c) if c in ("out.jsonl", "copy") else c for c in command], "--state-dir", str(typo))
    assert proc.returncode == 1 and f"no state directory at {typo} (check --state-dir;" in proc.stderr, proc.stderr
    assert "(pass --state-dir)" not in proc.stderr and not typo.exists()


@pytest.mark.parametrize("command", [["recall", "passport"], ["list"], ["forget", "mem-1"],
                                     ["erase", "--all", "--yes"]])
def test_a_read_on_a_state_dir_that_does_not_exist_is_refused_and_creates_nothing(tmp_path: Path,
                                                                                  command: list[str]) -> None:
    # a typo in --state-dir must not answer "no records" from a fresh, empty directory made on the spot
    typo = tmp_path / "stat"
    proc = mm(*command, "--state-dir", str(typo), "--identity", ID)
    assert proc.returncode == 1, proc.stdout
    assert f"no state directory at {typo}" in proc.stderr and "--state-dir" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert not typo.exists()
    # remember is the write that starts a state directory, as a gateway's first start does
    made = as_json(mm("remember", "Passport location", "Top drawer.", "--state-dir", str(typo), "--identity", ID,
                      "--json"))
    assert [r["memory_id"] for r in as_json(mm("recall", "passport", "--state-dir", str(typo), "--identity", ID,
                                               "--json"))["records"]] == [made["memory_id"]]


def test_expiry_metadata_and_a_filter_from_the_shell(gateway: Any) -> None:
    url = ["--url", gateway.url, "--identity", "shell:meta"]
    kept = as_json(mm("remember", "Apollo launch", "The apollo launch window opens at dawn.", "--metadata",
                      '{"project": "apollo", "n": 3}', "--ttl-s", "3600", *url, "--json"))
    assert kept["metadata"] == {"project": "apollo", "n": 3} and kept["expires_at_ms"] is not None
    other = as_json(mm("remember", "Gemini launch", "The gemini launch window opens at dusk.", "--metadata",
                       '{"project": "gemini", "n": 9}', *url, "--json"))
    assert other["expires_at_ms"] is None
    found = as_json(mm("recall", "launch window", "--filter", '{"project": "apollo"}', *url, "--json"))["records"]
    assert [r["memory_id"] for r in found] == [kept["memory_id"]]
    found = as_json(mm("recall", "launch window", "--filter", '{"n": {"$gte": 5}}', *url, "--json"))["records"]
    assert [r["memory_id"] for r in found] == [other["memory_id"]]
    # the options' own shape is checked here; what the object holds is the gateway's to judge
    for args, rule in ((["--metadata", "[1]"], "--metadata must be a JSON object"),
                       (["--metadata", "{nope"], "--metadata must be a JSON object"),
                       (["--ttl-s", "0"], "--ttl-s")):
        bad = mm("remember", "T", "B", *args, *url)
        assert bad.returncode == 2 and rule in bad.stderr, bad.stderr
    refused = mm("recall", "launch", "--filter", '{"n": {"$regex": "x"}}', *url)
    assert refused.returncode == 1 and "$regex" in refused.stderr and "Traceback" not in refused.stderr
    refused = mm("remember", "T", "B", "--metadata", '{"$where": 1}', *url)
    assert refused.returncode == 1 and "metadata" in refused.stderr
    deep = '{"a": ' * 5_000 + "1" + "}" * 5_000  # nested past the JSON reader's recursion limit
    for command, option in ((["recall", "launch"], "--filter"), (["remember", "T", "B"], "--metadata")):
        bad = mm(*command, option, deep, *url)
        assert bad.returncode == 2 and f"{option} must be a JSON object" in bad.stderr, bad.stderr[-500:]
        assert "Traceback" not in bad.stderr


@pytest.mark.parametrize(("value", "shown"), [("null", "got null"), ("[1]", "got an array"), ('"x"', "got a string"),
                                             ("3", "got a number"), ("true", "got a boolean")])
def test_an_option_that_is_not_a_json_object_names_what_it_is_in_json_terms(value: str, shown: str) -> None:
    """``--metadata null`` said ``got NoneType``, ``[1]`` ``got list``: Python's names, not the JSON the user typed."""
    for command, option in ((["remember", "T", "B"], "--metadata"), (["update", "mem-1"], "--metadata"),
                            (["recall", "launch"], "--filter"), (["list"], "--filter")):
        bad = mm(*command, option, value, "--identity", "shell:shape", "--url", "http://127.0.0.1:9")
        assert bad.returncode == 2, bad.stderr
        assert f"{option} must be a JSON object ({shown})" in bad.stderr, bad.stderr


def test_list_by_tag_and_metadata_filter_pages_through_every_match(gateway: Any) -> None:
    ident = "shell:list"
    url = ["--url", gateway.url, "--identity", ident]
    items = [{"title": f"Note {i}", "body": f"Body of note number {i}.", "tags": ["even"] if i % 2 == 0 else ["odd"],
              "metadata": {"project": "apollo" if i < 501 else "gemini", "n": i}} for i in range(520)]
    done = gateway.rpc("meta/agent_memory/remember_batch", {"identity": ident, "records": items})["result"]
    assert done["created"] == 520
    # more matches than one page of meta/agent_memory/list (500): the shell follows the cursor to the end
    apollo = as_json(mm("list", "--filter", '{"project": "apollo"}', *url, "--json"))
    assert len(apollo) == 501 and {r["metadata"]["project"] for r in apollo} == {"apollo"}
    assert len({r["memory_id"] for r in apollo}) == 501
    # tag and filter together: both must hold; --limit caps what is read
    both = as_json(mm("list", "--tag", "odd", "--filter", '{"n": {"$gte": 510}}', *url, "--json"))
    assert sorted(r["metadata"]["n"] for r in both) == [511, 513, 515, 517, 519]
    assert len(as_json(mm("list", "--tag", "even", "--limit", "7", *url, "--json"))) == 7
    table = mm("list", "--filter", '{"n": 519}', *url)
    assert table.returncode == 0 and "Note 519" in table.stdout and "Note 518" not in table.stdout
    # another identity's records never show, whatever the filter
    assert as_json(mm("list", "--filter", '{"project": "apollo"}', "--url", gateway.url, "--identity", "shell:x",
                      "--json")) == []
    refused = mm("list", "--filter", '{"n": {"$regex": "x"}}', *url)
    assert refused.returncode == 1 and "filter" in refused.stderr and "Traceback" not in refused.stderr
    bad = mm("list", "--filter", "[1]", *url)
    assert bad.returncode == 2 and "--filter must be a JSON object" in bad.stderr


#: what every ``list --json`` row holds, whatever the options: the record as meta/agent_memory/list returns it
RECORD_KEYS = {"memory_id", "title", "body", "tags", "metadata", "created_at_ms", "updated_at_ms", "expires_at_ms"}


def test_list_json_has_one_shape_whatever_the_options(gateway: Any) -> None:
    ident = "shell:shape"
    url = ["--url", gateway.url, "--identity", ident, "--json"]
    assert as_json(mm("list", *url)) == []
    items = [{"title": f"Note {i}", "body": f"Body {i}.", "tags": ["even" if i % 2 == 0 else "odd"],
              "metadata": {"n": i}} for i in range(4)]
    assert gateway.result("meta/agent_memory/remember_batch", {"identity": ident, "records": items})["created"] == 4
    shapes = {
        "plain": as_json(mm("list", *url)),
        "limit": as_json(mm("list", "--limit", "2", *url)),
        "tag": as_json(mm("list", "--tag", "even", *url)),
        "filter": as_json(mm("list", "--filter", '{"n": {"$gte": 1}}', *url)),
        "tag+filter+limit": as_json(mm("list", "--tag", "odd", "--filter", '{"n": {"$gte": 1}}', "--limit", "1", *url)),
    }
    for name, rows in shapes.items():
        assert isinstance(rows, list) and rows, name
        assert all(set(row) == RECORD_KEYS for row in rows), (name, rows[0])
    assert [r["title"] for r in shapes["plain"]] == ["Note 3", "Note 2", "Note 1", "Note 0"]  # newest updated first
    assert [r["title"] for r in shapes["limit"]] == ["Note 3", "Note 2"]
    assert sorted(r["title"] for r in shapes["tag"]) == ["Note 0", "Note 2"]
    assert len(shapes["filter"]) == 3 and len(shapes["tag+filter+limit"]) == 1
    # the table lists the same records
    table = mm("list", "--url", gateway.url, "--identity", ident)
    assert table.returncode == 0 and all(f"Note {i}" in table.stdout for i in range(4))


def test_erasing_one_id_says_the_other_records_are_its_versions(gateway: Any) -> None:
    """An id with two earlier versions erases three records: the line names the id and says the other two
    are its versions, so "3 records" never reads as three unrelated records gone."""
    url = ["--url", gateway.url, "--identity", "versions:erase"]
    first = as_json(mm("remember", "Locker", "Code 1111.", *url, "--json"))
    second = as_json(mm("update", first["memory_id"], "--body", "Code 2222.", *url, "--json"))
    third = as_json(mm("update", second["memory_id"], "--body", "Code 3333.", *url, "--json"))
    as_json(mm("remember", "Bystander", "Not a version.", *url, "--json"))
    dry = mm("erase", third["memory_id"], "--dry-run", *url)
    assert dry.returncode == 0, dry.stderr
    assert " ".join(dry.stdout.split()) == (f"would erase 3 records in identity scope 'versions:erase': "
                                            f"{third['memory_id']} and 2 other versions and copies of it")
    done = mm("erase", third["memory_id"], *url)
    assert " ".join(done.stdout.split()).startswith("erased 3 records in identity scope 'versions:erase': "
                                                    f"{third['memory_id']} and 2 other"), done.stdout
    assert [r["title"] for r in as_json(mm("list", *url, "--json"))] == ["Bystander"]
    everything = mm("erase", "--all", "--yes", *url)
    assert " ".join(everything.stdout.split()) == "erased 1 record in identity scope 'versions:erase'"


@pytest.mark.parametrize(("args", "pair"), [
    (["update", "mem-x", "--identity", ID, "--ttl-s", "5", "--clear-expiry"], ("--ttl-s", "--clear-expiry")),
    (["update", "mem-x", "--identity", ID, "--tag", "a", "--clear-tags"], ("--tag", "--clear-tags")),
    (["erase", "mem-x", "--all", "--identity", ID], ("MEMORY_ID", "--all")),
    (["list", "--identity", ID, "--url", "http://127.0.0.1:9", "--state-dir", "s"], ("--url", "--state-dir")),
    (["mcp", "--identity", ID, "--url", "http://127.0.0.1:9", "--state-dir", "s"], ("--url", "--state-dir")),
    (["backup", "d", "--url", "http://127.0.0.1:9", "--state-dir", "s"], ("--url", "--state-dir")),
    (["export", "--url", "http://127.0.0.1:9", "--state-dir", "s"], ("--url", "--state-dir/--config")),
    (["import", "--from", "mem0", "m", "--identity", "a", "--identity-from", "agent_id"],
     ("--identity", "--identity-from/--identity-segment")),
])
def test_two_exclusive_options_are_refused_in_one_wording(tmp_path: Path, args: list[str],
                                                          pair: tuple[str, str]) -> None:
    """Every pair of options a command takes one of is refused by one rule, before anything is sent or opened:
    a usage error naming both as typed, never a field name or a value (``--clear-expiry: true``)."""
    proc = subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and proc.stderr.endswith(f"Error: give {pair[0]} or {pair[1]}, not both\n"), proc.stderr
    assert not (tmp_path / "s").exists()
