"""A blank tag in ``meta/agent_memory/list``'s ``tags`` is refused, as a write's is, naming it (``tags.<i>``).

Before, ``tags: [""]`` (or ``["  "]``) was normalised away and the filter dropped: the call answered
every record of the identity, the untagged ones included, and ``meta-memory list --tag ""`` printed
them all under "matching #". A filter that cannot match must never widen to everything.
"""

from __future__ import annotations

import subprocess
import sys

from support import GatewayProcess

ME = "agent:tagged"


def test_a_blank_tag_filter_is_refused_not_dropped(gateway: GatewayProcess) -> None:
    gateway.result("meta/agent_memory/remember", {"identity": ME, "title": "Tagged", "body": "with a tag",
                                                  "tags": ["travel"]})
    gateway.result("meta/agent_memory/remember", {"identity": ME, "title": "Untagged", "body": "no tag"})
    for blank in ("", "   ", "\t"):
        err = gateway.error("meta/agent_memory/list", {"identity": ME, "tags": ["travel", blank]})
        assert err["code"] == -32602 and err["data"]["field"] == "tags.1", err
        assert err["message"] == "Invalid params: tags.1 must not be empty", err
    # a tag padded with spaces still names its tag, as a write's does
    padded = gateway.result("meta/agent_memory/list", {"identity": ME, "tags": ["  Travel "]})
    assert [r["title"] for r in padded["records"]] == ["Tagged"]


def test_list_with_a_blank_tag_on_the_command_line_is_refused(gateway: GatewayProcess) -> None:
    gateway.result("meta/agent_memory/remember", {"identity": ME, "title": "Untagged", "body": "no tag"})
    out = subprocess.run([sys.executable, "-m", "meta_memory.cli", "list", "--identity", ME, "--tag", "",
                          "--url", gateway.url], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert "Untagged" not in out.stdout
    assert "--tag #1 must not be empty [field=tags.0]" in out.stderr, out.stderr
