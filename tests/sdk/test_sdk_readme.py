"""The README's first Python example runs as written and prints the output the README shows
(ids and nonces aside)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
_VOLATILE = [(re.compile(r"mem-[0-9a-f-]+"), "mem-ID"), (re.compile(r"mem-token: [0-9a-f]+"), "mem-token: NONCE")]


def _blocks() -> tuple[str, str]:
    text = README.read_text(encoding="utf-8")
    start = text.index("From Python:")
    code = re.search(r"```python\n(.*?)```", text[start:], re.S)
    assert code is not None
    shown = re.search(r"```text\n(.*?)```", text[start + code.end():], re.S)
    assert shown is not None
    return code.group(1), shown.group(1)


def _normalise(out: str) -> list[str]:
    lines = out.strip().splitlines()
    for pattern, repl in _VOLATILE:
        lines = [pattern.sub(repl, line) for line in lines]
    return lines


def test_the_readme_python_example_prints_what_the_readme_shows(tmp_path: Path) -> None:
    code, shown = _blocks()
    assert "meta.agent(" in code and "handle.call(" not in code
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env=os.environ.copy())
    assert run.returncode == 0, run.stderr
    assert _normalise(run.stdout) == _normalise(shown)


def test_the_docs_say_what_connect_async_returns() -> None:
    """``Meta.connect_async(url)`` returns the handle itself (it is not awaited; its methods are): the
    README and docs/sdk.md say so alike."""
    import asyncio
    import inspect

    from meta_memory import Meta
    from meta_memory.sdk import AsyncMetaHandle

    handle = Meta.connect_async("http://127.0.0.1:9")
    assert isinstance(handle, AsyncMetaHandle) and not inspect.isawaitable(handle)
    asyncio.run(handle.aclose())
    readme = " ".join(README.read_text(encoding="utf-8").split())
    sdk = " ".join((README.parent / "docs" / "sdk.md").read_text(encoding="utf-8").split())
    assert "`Meta.connect_async(url)`, `build_async()`: the handle is returned directly, not awaited" in readme
    assert "(`h = Meta.connect_async(url)`, not `await`ed)" in sdk


def _config_block() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Configuration")
    block = re.search(r"```toml\n(.*?)```", text[start:], re.S)
    assert block is not None
    return block.group(1)


def test_the_readme_configuration_example_starts_a_runtime_as_written(tmp_path: Path) -> None:
    """The README's configuration block, copied as is, starts a runtime (an optional key left set to an
    address nothing answers would stop the start)."""
    import tomllib

    from meta_memory.cli import build_runtime

    block = _config_block()
    parsed = tomllib.loads(block)
    config = tmp_path / "meta.toml"
    config.write_text(block, encoding="utf-8")
    runtime = build_runtime(tmp_path / "state", config)
    try:
        assert runtime.config.gateway.max_request_bytes == parsed["gateway"]["max_request_bytes"]
        assert runtime.config.memory is not None and runtime.config.memory.kind == parsed["memory"]["kind"]
    finally:
        runtime.close()


def test_the_sdk_review_example_runs_and_prints_what_docs_sdk_shows(tmp_path: Path) -> None:
    """docs/sdk.md's review example (the README links it) goes from the quarantine listing to a
    decision with the row's own ``content_hash``, and a wrong hash is refused naming that field."""
    doc = (README.parent / "docs" / "sdk.md").read_text(encoding="utf-8")
    start = doc.index("## Reviewing quarantined writes")
    code = re.search(r"```python\n(.*?)```", doc[start:], re.S)
    assert code is not None
    shown = re.search(r"```text\n(.*?)```", doc[start + code.end():], re.S)
    assert shown is not None
    run = subprocess.run([sys.executable, "-c", code.group(1)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120, env=os.environ.copy())
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines() == shown.group(1).strip().splitlines()
    readme = " ".join(README.read_text(encoding="utf-8").split())
    assert "[docs/sdk.md](docs/sdk.md#reviewing-quarantined-writes)" in readme
    assert "expected_content_hash=row.content_hash" in readme
