"""The shell prints stored text as written: what models write is neither Rich markup, nor emoji codes,
nor terminal control.

Driven as a user would: the installed command in a subprocess against a real gateway, with the strings
LLMs actually produce (prompt-format tokens, chat-template markers, Rich-looking tags, emoji
shortcodes) and the terminal escapes a poisoned page can carry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from meta_memory.terminal import json_text, one_line, printable
from support import LocalServer, QuietHandler

pytestmark = pytest.mark.gateway

ID = "lead:main"

#: Text a model writes: the Llama-2 instruction tokens, a ChatML marker, Rich-looking tags, a shortcode.
LLM_TITLE = "[INST] summarise [/INST] <|im_start|>assistant [red]alert[/red] :one: [/foo]"
#: What a poisoned tool result can carry into a body: an SGR colour, a window-title OSC, an 8-bit CSI,
#: a carriage return that would overwrite the line, a bell, and a right-to-left override.
ESCAPES = "colour \x1b[31mRED\x1b[0m title \x1b]0;pwned\x07 csi \x9b2J back\rover rtl \u202eevil"


def mm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "COLUMNS": "400"})


def _no_control(out: str) -> None:
    for ch in ("\x1b", "\x9b", "\x07", "\r", "\u202e"):
        assert ch not in out, f"{ch!r} reached the terminal"


def test_prompt_tokens_markup_and_shortcodes_are_printed_as_written(gateway: Any) -> None:
    url = ["--url", gateway.url, "--identity", ID]
    made = mm("remember", LLM_TITLE, "the body says [bold]hello[/bold] and :smile: <|im_end|>", *url)
    assert made.returncode == 0, made.stderr
    assert "[/INST]" in made.stdout and "[red]alert[/red]" in made.stdout and ":one:" in made.stdout

    # every later recall and list of the identity still works and shows the text as stored
    found = mm("recall", "summarise alert", *url)
    assert found.returncode == 0, found.stderr
    for piece in ("[INST] summarise [/INST]", "<|im_start|>assistant", "[red]alert[/red]", ":one:", "[/foo]",
                  "[bold]hello[/bold]", ":smile:", "<|im_end|>"):
        assert piece in found.stdout, piece
    assert "1️⃣" not in found.stdout and "😄" not in found.stdout

    listed = mm("list", *url)
    assert listed.returncode == 0, listed.stderr
    assert "[/INST]" in listed.stdout and "[red]alert[/red]" in listed.stdout and ":one:" in listed.stdout

    # the query itself is echoed in the table title and in the "no match" line
    echoed = mm("recall", "[/INST] [red]nothing[/red] :one:", "--url", gateway.url, "--identity", "lead:other")
    assert echoed.returncode == 0, echoed.stderr
    assert "[/INST] [red]nothing[/red] :one:" in echoed.stdout


def test_terminal_escapes_in_stored_text_are_shown_not_obeyed(gateway: Any) -> None:
    url = ["--url", gateway.url, "--identity", ID]
    stored = gateway.result("meta/agent_memory/remember",
                            {"identity": ID, "title": "escapes \x1b[1mbold\x1b[0m", "body": ESCAPES, "tags": ["t\x1b[2Kx"]})
    for command in (["recall", "colour escapes"], ["list"]):
        out = mm(*command, *url)
        assert out.returncode == 0, out.stderr
        _no_control(out.stdout)
    shown = mm("recall", "colour escapes", *url).stdout
    assert "\\x1b[31mRED" in shown and "\\x9b2J" in shown and "\\x07" in shown and "\\u202eevil" in shown

    as_json = mm("recall", "colour escapes", *url, "--json")
    assert as_json.returncode == 0, as_json.stderr
    _no_control(as_json.stdout)
    records = json.loads(as_json.stdout)["records"]  # still valid JSON that decodes to exactly what is stored
    assert [(r["memory_id"], r["body"]) for r in records] == [(stored["memory_id"], ESCAPES)]


#: Characters that show nothing: a zero-width space, a soft hyphen, the braille blank, a musical format
#: control (above U+FFFF), a Hangul filler and an interlinear annotation anchor. (A stray variation selector
#: is refused at write; one after an emoji only picks its presentation and is printed as it is.)
HIDDEN = ("\u200b", "\u00ad", "\u2800", "\U0001d173", "\u3164", "\ufff9")


def test_invisible_characters_in_titles_and_tags_are_shown_as_escapes(gateway: Any) -> None:
    url = ["--url", gateway.url, "--identity", ID]
    title = "pay" + "".join(HIDDEN) + "roll \u2764\ufe0f"
    gateway.result("meta/agent_memory/remember",
                   {"identity": ID, "title": title, "body": "quiet body", "tags": ["ta\u200bg"]})
    listed = mm("list", *url)
    assert listed.returncode == 0, listed.stderr
    for ch in HIDDEN:
        assert ch not in listed.stdout, f"{ch!r} reached the terminal"
    assert "pay\\u200b\\xad\\u2800\\U0001d173\\u3164\\ufff9roll \u2764\ufe0f" in listed.stdout
    assert "ta\\u200bg" in listed.stdout
    as_json = mm("list", *url, "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert not any(ch in as_json.stdout for ch in HIDDEN)
    assert any(r["title"] == title for r in json.loads(as_json.stdout))


class _HostileGateway(QuietHandler):
    """A server posing as a gateway whose every refusal carries terminal escapes."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        call = self.read_json()
        error = {"code": -32040, "message": "refused \x1b]0;pwned\x07\x1b[2J\rgone",
                 "data": {"kind": "agent_memory", "reason": "io\x1b[31m"}}
        self.send_body(200, "application/json", json.dumps({"jsonrpc": "2.0", "error": error,
                                                             "id": call.get("id")}).encode())


def test_a_gateway_refusal_message_cannot_drive_the_terminal() -> None:
    server = LocalServer(_HostileGateway)
    try:
        out = mm("recall", "anything", "--url", server.url, "--identity", ID)
    finally:
        server.close()
    assert out.returncode == 1
    _no_control(out.stderr)
    assert "\\x1b]0;pwned\\x07" in out.stderr and out.stderr.count("\n") == 1


def test_the_one_rule_escapes_every_control_and_keeps_text() -> None:
    assert printable("a\x1b[31mb\tc\nd") == "a\\x1b[31mb\tc\nd"
    assert printable("\x00\x7f\x85\x9b\u200e\u2067") == "\\x00\\x7f\\x85\\x9b\\u200e\\u2067"
    assert printable("naïve 東京 😀 [red]x[/red]") == "naïve 東京 😀 [red]x[/red]"
    assert printable("a\u00ad\u2800\U0001d173b") == "a\\xad\\u2800\\U0001d173b"
    assert one_line("a\n b\x1b") == "a b\\x1b"
    value = {"t": "x\x1b\x9b\u202e\x7fy", "ok": "é"}
    dumped = json_text(value)
    assert json.loads(dumped) == value and not any(ch in dumped for ch in "\x1b\x9b\u202e\x7f")
    assert "é" in dumped
