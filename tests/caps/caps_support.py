"""Size-cap cases and one uniform "write" per write path, for the caps suite.

Caps (UTF-8 bytes, after the write path's own normalisation: titles and descriptions are
whitespace-compacted, bodies trimmed, tags trimmed and ASCII-lowercased): title 200, description
400, body 65,536, tags at most 32 entries of at most 64 bytes each.

A *path* is a function ``write(identity, case) -> Outcome``: it performs one write of the case's
fields through that path and reports whether it was stored (with the record as the console
reads it back) or refused (with the text the caller saw).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

from support import RpcClient, memory_id_of  # noqa: F401 - memory_id_of re-exported for the caps tests

TITLE, DESCRIPTION, BODY, TAG_COUNT, TAG_BYTES = 200, 400, 65_536, 32, 64


def fill(nbytes: int, unit: str = "a", prefix: str = "") -> str:
    """A string of exactly ``nbytes`` UTF-8 bytes: ``prefix``, then ``unit`` repeated, then ASCII
    ``a`` for the remainder the unit cannot fill."""
    room = nbytes - len(prefix.encode())
    width = len(unit.encode())
    assert room >= 0
    out = prefix + unit * (room // width) + "a" * (room % width)
    assert len(out.encode()) == nbytes
    return out


class Raw(RpcClient):
    """Raw JSON-RPC over HTTP: the whole response object, so ``error.data.field`` can be checked."""


def uniq() -> str:
    return uuid.uuid4().hex[:10]


@dataclass(frozen=True)
class Case:
    """One write: ``field`` is the capped field under test (``title``, ``body``, ``description``,
    ``tags``); ``accepted`` says whether it is within the caps; ``rule`` is the refusal text."""

    name: str
    field: str
    accepted: bool
    title: str | None = None
    body: str | None = None
    description: str | None = None
    tags: tuple[str, ...] | None = None
    rule: str = ""

    def fields(self) -> dict[str, Any]:
        """Title, body (unique per call, so exact-content dedup never answers) and any extras."""
        tag = uniq()
        out: dict[str, Any] = {
            "title": self.title if self.title is not None else f"Capped write {tag}",
            "body": self.body if self.body is not None else f"A body for the capped write {tag}.",
        }
        if self.description is not None:
            out["description"] = self.description
        if self.tags is not None:
            out["tags"] = list(self.tags)
        if self.body is not None and self.title is None:
            out["title"] = f"Capped body {tag}"
        return out


def _cases() -> list[Case]:
    t_rule = f"title must be at most {TITLE} bytes"
    b_rule = f"body must be at most {BODY} bytes"
    d_rule = f"description must be at most {DESCRIPTION} bytes"
    n_rule = f"tags must contain at most {TAG_COUNT} entries"
    g_rule = f"tags.0 must be at most {TAG_BYTES} bytes"  # the one tag, by its index
    return [
        Case("title ascii at cap", "title", True, title=fill(TITLE)),
        Case("title ascii cap+1", "title", False, title=fill(TITLE + 1), rule=t_rule),
        Case("title 2-byte at cap (100 chars)", "title", True, title="é" * 100),
        Case("title 2-byte over cap (101 chars)", "title", False, title="é" * 101, rule=t_rule),
        Case("title 4-byte at cap (50 chars)", "title", True, title="😀" * 50),
        Case("title 4-byte cap+1", "title", False, title="😀" * 50 + "a", rule=t_rule),
        Case("title 3-byte 67 chars", "title", False, title="€" * 67, rule=t_rule),
        Case("body ascii at cap", "body", True, body=fill(BODY, prefix=uniq())),
        Case("body ascii cap+1", "body", False, body=fill(BODY + 1, prefix=uniq()), rule=b_rule),
        Case("body 4-byte at cap", "body", True, body=fill(BODY, "😀", prefix=uniq() + "ab")),
        Case("body 2-byte over cap (32,769 chars)", "body", False, body="é" * 32_769, rule=b_rule),
        Case("description ascii at cap", "description", True, description=fill(DESCRIPTION)),
        Case("description ascii cap+1", "description", False, description=fill(DESCRIPTION + 1), rule=d_rule),
        Case("description 2-byte at cap", "description", True, description="é" * 200),
        Case("description 2-byte over cap (201 chars)", "description", False, description="é" * 201, rule=d_rule),
        Case("tags 32 entries", "tags", True, tags=tuple(f"tag-{i:02d}" for i in range(TAG_COUNT))),
        Case("tags 33 entries", "tags", False, tags=tuple(f"tag-{i:02d}" for i in range(TAG_COUNT + 1)), rule=n_rule),
        Case("tag ascii at cap", "tags", True, tags=(fill(TAG_BYTES, "t"),)),
        Case("tag ascii cap+1", "tags.0", False, tags=(fill(TAG_BYTES + 1, "t"),), rule=g_rule),
        Case("tag 2-byte at cap (32 chars)", "tags", True, tags=("é" * 32,)),
        Case("tag 2-byte over cap (33 chars)", "tags.0", False, tags=("é" * 33,), rule=g_rule),
        Case("32 tags each at cap", "tags", True,
             tags=tuple(fill(TAG_BYTES, "é", prefix=f"{i:02d}") for i in range(TAG_COUNT))),
    ]


CASES = _cases()


def cases_for(*, description: bool) -> list[Case]:
    """The cases a path can express (only the ``memory`` tool has a description)."""
    return [c for c in CASES if description or c.field != "description"]


@dataclass
class Outcome:
    """``stored``: the record as the console reads it back (title, description, body, tags), or
    ``None`` when refused; ``text``: what the caller saw on refusal; ``field``: the refused field
    when the path reports one structurally (JSON-RPC ``data.field``)."""

    stored: dict[str, Any] | None
    text: str = ""
    field: str | None = None
    extra: dict[str, Any] = dc_field(default_factory=dict)


def expected_stored(case_fields: dict[str, Any]) -> dict[str, Any]:
    """What an accepted write stores: the caps apply to these normalised values."""
    tags = sorted({t.strip().translate({c: c + 32 for c in range(65, 91)}) for t in case_fields.get("tags", [])} - {""})
    return {
        "title": " ".join(case_fields["title"].split()),
        "description": " ".join(case_fields.get("description", "").split()),
        "body": case_fields["body"].strip(),
        "tags": tags,
    }


def proposal_id_of(tool_text: str) -> str:
    """The proposal id in ``Proposed to mob scope as <id>. ...``."""
    return tool_text.split(" as ", 1)[1].split(" ", 1)[0].rstrip(".")
