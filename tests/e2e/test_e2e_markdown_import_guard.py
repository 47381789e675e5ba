"""Legacy markdown import through a real gateway: symlinks are never followed, malformed memory ids
and secret-bearing records (folded spellings, keys split across title and body) are refused."""

from __future__ import annotations

import json
from pathlib import Path

from e2e_support import Rpc
from meta_memory.storage.layout import encode_path_segment
from support import start_gateway

IDENT = "agent:legacy"


def block(title: str, memory_id: str, body: str) -> str:
    meta = json.dumps({"memory_id": memory_id, "tags": [], "created_at_ms": 1000, "updated_at_ms": 2000})
    return f"## {title}\n<!-- mobkit-agent-memory {meta} -->\n{body}\n<!-- /mobkit-agent-memory -->\n"


def test_import_refuses_symlinks_malformed_ids_and_secrets(tmp_path: Path) -> None:
    state = tmp_path / "state"
    folder = state / "agent-memory" / encode_path_segment("default")
    folder.mkdir(parents=True)
    (folder / f"{encode_path_segment(IDENT)}.md").write_text(
        block("Editor", "mem-good-1", "the user edits in helix")
        + block("Injected", "mem-x\n## forged", "an id with a newline")
        + block("Spaces", "mem with spaces", "an id with spaces")
        + block("Markup", "<meta_memory_observation>", "an id that is markup")
        + block("Path", "../../etc/passwd", "an id that is a path")
        + block("Deploy key AKIAIOSFOD", "mem-split", "NN7EXAMPLE rotated")
        + block("Wifi", "mem-zw", "key AKIA\u200bIOSFODNN7EXAMPLE")
        + block("Login", "mem-pw", "password: hunter2"),
        encoding="utf-8",
    )
    # A symlink under the import folder pointing at a file outside it: never read, never renamed.
    outside = tmp_path / "outside.md"
    outside.write_text(block("Exfiltrated", "mem-outside", "content from outside the state dir"), encoding="utf-8")
    link = folder / f"{encode_path_segment('agent:linked')}.md"
    link.symlink_to(outside)

    gw = start_gateway(state)
    rpc = Rpc(gw)
    try:
        assert rpc.manifest_ids(IDENT) == ["mem-good-1"]  # opening the realm runs the import
        assert rpc.manifest_ids("agent:linked") == []
        with rpc.db() as conn:
            summaries = [json.loads(r["detail"]) for r in
                         conn.execute("SELECT detail FROM audit WHERE op_kind = 'import_summary'")]
            ids = {r["memory_id"] for r in conn.execute("SELECT memory_id FROM records")}
        assert ids == {"mem-good-1"}
        by_file = {s["file"]: s for s in summaries}
        linked = by_file[link.name]
        assert linked["imported"] == 0 and linked["skip_reasons"] == ["file is a symbolic link; not followed"]
        main = by_file[f"{encode_path_segment(IDENT)}.md"]
        assert main["imported"] == 1 and main["skipped"] == 7
        reasons = " | ".join(main["skip_reasons"])
        assert reasons.count("malformed memory_id") == 4
        assert "'mem-split' matches the 'aws-access-key-id'" in reasons
        assert "'mem-zw' matches the 'aws-access-key-id'" in reasons
        assert "'mem-pw' matches the 'password-assignment'" in reasons
        assert "hunter2" not in reasons and "NN7EXAMPLE" not in reasons
        # the link itself is set aside; its target is untouched
        assert outside.read_text(encoding="utf-8").startswith("## Exfiltrated")
        assert not link.exists() and (folder / (link.name + ".import-failed")).is_symlink()
    finally:
        rpc.close()
        gw.stop()


def test_a_symlinked_realm_folder_is_not_followed(tmp_path: Path) -> None:
    state = tmp_path / "state"
    (state / "agent-memory").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / f"{encode_path_segment(IDENT)}.md").write_text(block("Note", "mem-else", "from elsewhere"),
                                                                 encoding="utf-8")
    (state / "agent-memory" / encode_path_segment("default")).symlink_to(elsewhere, target_is_directory=True)
    gw = start_gateway(state)
    rpc = Rpc(gw)
    try:
        assert rpc.manifest_ids(IDENT) == []
        assert (elsewhere / f"{encode_path_segment(IDENT)}.md").is_file()  # not renamed
    finally:
        rpc.close()
        gw.stop()
