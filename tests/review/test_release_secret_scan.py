"""Quarantine release runs the one secret scanner: a record stored before its class was known --
a key split across title and body, or hidden by a zero-width character -- cannot be released."""

from __future__ import annotations

import pytest

from meta_memory.agent_memory.hashing import content_hash
from support import raw_write

from .conftest import REALM, Env
from .test_quarantine import refused, run


@pytest.mark.parametrize(("title", "body", "secret_class"), [
    ("Deploy key AKIAIOSFOD", "NN7EXAMPLE rotated", "aws-access-key-id"),
    ("Deploy key", "AKIA\u200bIOSFODNN7EXAMPLE", "aws-access-key-id"),
    ("Bot", "xoxb-123456789012-AbCdEfGhIjKl", "slack-token"),
    ("Router", "password: hunter2", "password-assignment"),
])
def test_release_is_refused_for_content_the_scanner_now_knows(env: Env, title: str, body: str,
                                                               secret_class: str) -> None:
    origin = env.poisoned()
    raw_write(env.store, REALM, "UPDATE records SET title = ?, body = ?, content_hash = ? WHERE memory_id = ?",
              (title, body, content_hash(title, body), origin.id))
    rec = env.store.get(REALM, origin.id)
    err = refused(env, rec, "release")
    assert err.reason == "secret_detected"
    assert err.to_jsonrpc()["data"]["class"] == secret_class
    for fragment in ("IOSFODNN", "AbCdEfGh", "hunter2"):
        assert fragment not in err.message
    assert run(env, rec, "tombstone").outcome == "tombstoned"
