"""What the memory commands say and how they exit: ``list --limit`` as its help describes it,
``--json`` answers on stdout (results and refusals alike), no silent ``erase --all``.

Driven as a user would: ``meta-memory`` in a subprocess, embedded on a state directory and against a
real gateway over HTTP.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from meta_memory.limits import MAX_MANIFEST_K

pytestmark = pytest.mark.gateway

ID = "lead:main"


def mm(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], input=stdin, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})


def ok_json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_list_limit_is_at_most_n_and_the_manifest_k_is_its_working_set(tmp_path: Path, gateway: Any) -> None:
    """``list --limit N`` lists at most N records, newest updated first, as its help says; the RPC
    ``meta/agent_memory/manifest``'s ``k`` keeps the spec's working set (up to 2k entries) and refuses
    the same bound it documents."""
    where = ["--state-dir", str(tmp_path / "s"), "--identity", ID]
    for i in range(5):
        ok_json(mm("remember", f"Note {i}", f"body {i}", *where, "--json"))
    assert [r["title"] for r in ok_json(mm("list", "--limit", "1", *where, "--json"))] == ["Note 4"]
    assert len(ok_json(mm("list", "--limit", "3", *where, "--json"))) == 3
    assert len(ok_json(mm("list", *where, "--json"))) == 5
    assert "At most this many records" in " ".join(mm("list", "--help").stdout.split())
    for i in range(4):
        gateway.result("meta/agent_memory/remember", {"identity": ID, "title": f"N{i}", "body": f"b{i}"})
    got = gateway.result("meta/agent_memory/manifest", {"identity": ID, "k": 1})["records"]
    assert len(got) == 2
    err = gateway.error("meta/agent_memory/manifest", {"identity": ID, "k": MAX_MANIFEST_K + 1})
    assert err["code"] == -32602 and err["data"]["field"] == "k"


def test_remember_says_when_the_record_already_existed(tmp_path: Path) -> None:
    where = ["--state-dir", str(tmp_path / "s"), "--identity", ID]
    first = mm("remember", "Passport", "Top drawer.", *where)
    assert first.returncode == 0 and f"remembered for {ID}" in first.stdout and "already" not in first.stdout
    again = mm("remember", "Passport", "Top drawer.", *where)
    assert again.returncode == 0, again.stderr
    said = " ".join(again.stdout.split())
    assert f"already remembered for {ID}" in said and "nothing new written" in said
    merged = " ".join(mm("remember", "Passport", "Top drawer.", "--tag", "travel", *where).stdout.split())
    assert "already remembered" in merged and "tags merged into a new version of mem-" in merged
    # a merge writes a version: the answer never also says nothing was written, and names the tag added
    assert "nothing new written" not in merged and "tag added: travel" in merged, merged


def test_remember_of_a_duplicate_says_its_ttl_and_metadata_were_not_applied(tmp_path: Path) -> None:
    """A remember answered by a record already holding the title and body writes nothing new (or only a
    tag merge's version): its ``--ttl-s`` and ``--metadata`` are not applied, and the command says so on
    stderr, naming each and the ``update`` that would apply them."""
    where = ["--state-dir", str(tmp_path / "s"), "--identity", ID]
    first = ok_json(mm("remember", "Passport", "Top drawer.", *where, "--json"))
    plain = mm("remember", "Passport", "Top drawer.", *where)
    assert plain.returncode == 0 and "not applied" not in plain.stderr, plain.stderr
    again = mm("remember", "Passport", "Top drawer.", "--ttl-s", "60", "--metadata", '{"team": "ops"}', *where)
    assert again.returncode == 0, again.stderr
    warned = " ".join(again.stderr.split())
    assert "warning: --ttl-s and --metadata not applied" in warned and "nothing new was written" in warned, warned
    assert f"meta-memory update {first['memory_id']} --ttl-s 60 --metadata" in warned, warned
    stored = ok_json(mm("list", *where, "--json"))
    assert [(r["expires_at_ms"], r["metadata"]) for r in stored] == [(None, {})]
    # --json answers the RPC result on stdout (the record as it stands) and warns on stderr alike
    as_json = mm("remember", "Passport", "Top drawer.", "--ttl-s", "60", *where, "--json")
    assert json.loads(as_json.stdout)["expires_at_ms"] is None
    assert "warning: --ttl-s not applied" in " ".join(as_json.stderr.split()), as_json.stderr
    merged = mm("remember", "Passport", "Top drawer.", "--tag", "travel", "--metadata", '{"team": "ops"}', *where)
    said = " ".join(merged.stderr.split())
    assert "warning: --metadata not applied" in said and "tags were merged into a new version" in said, said
    # metadata the record already holds is no news
    same = mm("remember", "Passport", "Top drawer.", "--metadata", "{}", *where)
    assert same.returncode == 0 and "not applied" not in same.stderr, same.stderr


def test_tables_are_as_wide_as_their_content(tmp_path: Path) -> None:
    """A table is sized to its cells, not stretched to its caption: the caption reads on a line of its own."""
    where = ["--state-dir", str(tmp_path / "s"), "--identity", ID]
    made = ok_json(mm("remember", "Only", "The only record.", *where, "--json"))
    table_width = len(made["memory_id"]) + len(" │ Only  │ tags │ ") + 4
    for args in (["remember", "Only", "The only record."], ["remember", "Only", "The only record.", "--tag", "x"],
                 ["list", "--tag", "absent"], ["list"]):
        out = mm(*args, *where)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.rstrip("\n").splitlines()
        drawn = [line for line in lines if line[:1] in "┏┃┡│└"]
        assert drawn, out.stdout
        # as wide as the cells, no padding to the right of the frame
        assert max(len(line) for line in drawn) <= table_width and all(line[-1] in "┓┃┩│┘" for line in drawn), \
            out.stdout
    empty = mm("list", "--tag", "absent", *where).stdout.splitlines()
    assert empty[0].startswith(f"memory of {ID} matching ") and empty[0].endswith("(0 records)")
    assert len(empty[1]) < len(empty[0])  # the empty table is narrower than its caption


def test_token_hash_new_prints_one_space_after_each_label() -> None:
    out = mm("token", "hash", "--new")
    assert out.returncode == 0, out.stderr
    token_line, digest_line = out.stdout.splitlines()
    assert re.fullmatch(r"token: [A-Za-z0-9_-]{43}", token_line), token_line
    assert re.fullmatch(r"sha256: [0-9a-f]{64}", digest_line), digest_line


def test_remember_names_the_identity_it_wrote_to(tmp_path: Path) -> None:
    where = ["--state-dir", str(tmp_path / "s")]
    said = " ".join(mm("remember", "Visa", "Blue folder.", *where, "--identity", "rt:someone:3").stdout.split())
    assert "remembered for someone (named rt:someone:3)" in said, said
    listed = ok_json(mm("list", *where, "--identity", "someone", "--json"))
    assert [r["title"] for r in listed] == ["Visa"]


def test_counts_are_singular_for_one(tmp_path: Path) -> None:
    where = ["--state-dir", str(tmp_path / "s"), "--identity", ID]
    ok_json(mm("remember", "Only", "The only record.", "--tag", "solo", *where, "--json"))
    assert "(1 record)" in mm("list", *where).stdout
    assert "(1 record)" in mm("list", "--tag", "solo", *where).stdout
    assert "(1 records)" not in mm("list", *where).stdout
    assert "would erase 1 record in" in mm("erase", "--all", "--dry-run", *where).stdout


def test_an_empty_table_keeps_its_caption_on_one_line(tmp_path: Path) -> None:
    """A table with no rows is narrower than its caption: the caption still reads on one line."""
    where = ["--state-dir", str(tmp_path / "s"), "--identity", ID]
    ok_json(mm("remember", "Only", "The only record.", *where, "--json"))
    for args in (["list", "--tag", "absent"], ["list", "--filter", '{"team": "nobody"}']):
        out = mm(*args, *where)
        assert out.returncode == 0, out.stderr
        caption = out.stdout.splitlines()[0].rstrip()
        assert caption.startswith(f"memory of {ID} matching ") and caption.endswith("(0 records)"), out.stdout


def test_json_refusals_are_a_json_error_on_stdout(tmp_path: Path, gateway: Any) -> None:
    url = ["--url", gateway.url, "--identity", ID]
    refused = mm("remember", " ", "body", *url, "--json")
    assert refused.returncode == 1
    assert json.loads(refused.stdout) == {"error": {"code": -32602, "message": "Invalid params: title must not be empty",
                                                    "data": {"kind": "invalid_params", "field": "title"}}}
    assert "refused (invalid_params)" in refused.stderr  # the text line stays for a person reading stderr
    gone = mm("forget", "mem-nosuchrecord", *url, "--json")  # no such record: refused, as update refuses it
    assert gone.returncode == 1 and json.loads(gone.stdout)["error"]["data"] == {
        "kind": "not_found", "memory_id": "mem-nosuchrecord"}
    down = mm("recall", "x", "--url", "http://127.0.0.1:9", "--identity", ID, "--json")
    assert down.returncode == 1
    error = json.loads(down.stdout)["error"]
    assert error["code"] is None and error["data"] == {"kind": "unreachable"} and error["message"]
    missing = mm("list", "--state-dir", str(tmp_path / "nope"), "--identity", ID, "--json")
    assert missing.returncode == 1 and json.loads(missing.stdout)["error"]["data"] == {"kind": "startup"}


def test_recall_json_is_the_rpc_result(gateway: Any) -> None:
    url = ["--url", gateway.url, "--identity", ID]
    made = ok_json(mm("remember", "Passport", "Top drawer of the desk.", *url, "--json"))
    found = ok_json(mm("recall", "passport", *url, "--json"))
    rpc = gateway.result("meta/agent_memory/recall", {"identity": ID, "query_text": "passport"})
    assert found == rpc and [r["memory_id"] for r in found["records"]] == [made["memory_id"]]
    skipped = ok_json(mm("recall", "the", *url, "--json"))
    assert skipped == {"records": [], "skip_reason": "no_query_terms"}


def test_erase_all_needs_yes(tmp_path: Path) -> None:
    where = ["--state-dir", str(tmp_path / "s"), "--identity", ID]
    for i in range(2):
        ok_json(mm("remember", f"Note {i}", f"body {i}", *where, "--json"))
    refused = mm("erase", "--all", *where)
    assert refused.returncode == 2 and "pass --yes" in refused.stderr
    assert len(ok_json(mm("list", *where, "--json"))) == 2  # nothing erased
    assert mm("erase", "--all", *where, stdin="y\n").returncode == 2  # piped input is no confirmation
    assert ok_json(mm("erase", "--all", "--dry-run", *where, "--json"))["count"] == 2
    done = ok_json(mm("erase", "--all", "--yes", *where, "--json"))
    assert done["count"] == 2 and ok_json(mm("list", *where, "--json")) == []


@pytest.mark.parametrize("over", ["gateway", "state_dir"])
def test_erasing_twice_is_refused_as_the_gateway_refuses_it_and_says_why(tmp_path: Path, gateway: Any,
                                                                         over: str) -> None:
    """The second erase of an id finds nothing: the gateway answers -32001 not_found naming the id, so the
    command exits 1 with that refusal (``--json``: the error object as answered) and says the id was
    already erased; an id the identity never held is refused alike and told apart from nothing else."""
    where = ["--url", gateway.url] if over == "gateway" else ["--state-dir", str(tmp_path / "s")]
    mine = [*where, "--identity", ID]
    made = ok_json(mm("remember", "Old address", "12 Elm Street", *mine, "--json"))["memory_id"]
    assert ok_json(mm("erase", made, *mine, "--json"))["count"] == 1
    expected = {"error": {"code": -32001, "message": f"unknown memory record '{made}'",
                          "data": {"kind": "not_found", "memory_id": made}}}
    for args in ((), ("--dry-run",)):
        again = mm("erase", made, *args, *mine, "--json")
        assert again.returncode == 1 and json.loads(again.stdout) == expected
        said = " ".join(again.stderr.split())
        assert f"refused (not_found): unknown memory record '{made}'" in said
        assert f"{made} was already erased from {ID}: nothing is left to erase (nothing changed)" in said
    other = mm("erase", made, *where, "--identity", "scout:one")
    assert other.returncode == 1 and other.stdout == ""
    assert f"scout:one holds no record {made}: an unknown id, one already erased, or another identity's" \
        in " ".join(other.stderr.split())
    assert "already erased from" not in other.stderr
    helped = " ".join(mm("erase", "--help").stdout.split())
    assert "one already erased (erasing twice changes nothing" in helped and "exit 1" in helped


def test_list_limit_is_the_rpc_bound_and_no_limit_pages_through_everything(tmp_path: Path, gateway: Any) -> None:
    """``list --limit`` takes what ``meta/agent_memory/list``'s ``limit`` takes (1..MAX_LIST_LIMIT) and says
    so; without ``--limit`` every record is listed, over more than one page."""
    from meta_memory.limits import MAX_LIST_LIMIT

    url = ["--url", gateway.url, "--identity", ID]
    records = [{"title": f"Paged {i}", "body": f"body {i}"} for i in range(MAX_LIST_LIMIT + 3)]
    done = gateway.result("meta/agent_memory/remember_batch", {"identity": ID, "records": records})
    assert done["created"] == len(records)
    over = mm("list", "--limit", str(MAX_LIST_LIMIT + 1), *url)
    assert over.returncode == 2 and f"1<=x<={MAX_LIST_LIMIT}" in over.stderr, over.stderr
    err = gateway.error("meta/agent_memory/list", {"identity": ID, "limit": MAX_LIST_LIMIT + 1})
    assert err["data"]["field"] == "limit" and f"between 1 and {MAX_LIST_LIMIT}" in err["message"]
    assert len(ok_json(mm("list", "--limit", str(MAX_LIST_LIMIT), *url, "--json"))) == MAX_LIST_LIMIT
    assert len(ok_json(mm("list", *url, "--json"))) == len(records)
    shown = " ".join(mm("list", "--help").stdout.split())
    assert f"(1..{MAX_LIST_LIMIT}," in shown and "without it every active record" in shown
    rpc_doc = (Path(__file__).resolve().parents[2] / "docs" / "rpc.md").read_text(encoding="utf-8")
    assert f"limit?: 1..{MAX_LIST_LIMIT} (default 100)" in rpc_doc


def test_erase_all_of_an_identity_holding_nothing_says_nothing_was_erased(tmp_path: Path) -> None:
    where = ["--state-dir", str(tmp_path / "s"), "--identity", ID]
    ok_json(mm("remember", "Someone else's", "body", "--state-dir", str(tmp_path / "s"), "--identity", "scout:one",
               "--json"))
    for args, said in ((["--dry-run"], "nothing would be erased"), (["--yes"], "nothing was erased")):
        out = mm("erase", "--all", *args, *where)
        assert out.returncode == 0, out.stderr
        text = " ".join(out.stdout.split())
        assert text == f"{ID} holds no record or proposal in the default realm: {said}", text
        assert "no scope" not in text and "0 records" not in text
    assert ok_json(mm("erase", "--all", "--yes", *where, "--json"))["count"] == 0  # --json: the RPC's answer


def test_list_limit_says_more_follow_and_the_cursor_pages_on(tmp_path: Path) -> None:
    where = ["--state-dir", str(tmp_path / "s"), "--identity", ID]
    for i in range(5):
        ok_json(mm("remember", f"Note {i}", f"body {i}", "--tag", "n", *where, "--json"))
    first = mm("list", "--limit", "2", "--tag", "n", *where)
    assert first.returncode == 0, first.stderr
    said = " ".join(first.stdout.split())
    assert "Note 4" in said and "Note 3" in said and "Note 2" not in said
    assert "more records follow: list them with --cursor " in said and said.endswith("--limit 2 --tag n")
    cursor = said.split("--cursor ", 1)[1].split()[0]
    second = " ".join(mm("list", "--limit", "2", "--tag", "n", "--cursor", cursor, *where).stdout.split())
    assert "Note 2" in second and "Note 1" in second and "Note 4" not in second and "more records follow" in second
    cursor = second.split("--cursor ", 1)[1].split()[0]
    last = mm("list", "--limit", "2", "--tag", "n", "--cursor", cursor, *where, "--json")
    assert [r["title"] for r in ok_json(last)] == ["Note 0"] and "more records follow" not in last.stderr
    # --json keeps its shape (an array); the way on is said on stderr
    page = mm("list", "--limit", "3", *where, "--json")
    assert [r["title"] for r in ok_json(page)] == ["Note 4", "Note 3", "Note 2"]
    assert "more records follow: list them with --cursor " in page.stderr
    # everything listed, or a limit the records fit in: nothing more to say
    assert "more records follow" not in mm("list", *where).stdout
    assert "more records follow" not in " ".join(mm("list", "--limit", "5", *where).stdout.split())
    bad = mm("list", "--cursor", "nonsense", *where, "--json")
    assert bad.returncode == 1 and json.loads(bad.stdout)["error"]["data"]["field"] == "cursor"
