"""What the benchmarks share: a ``meta-memory serve`` subprocess on a free port, its stop, an
in-process SQLite store on a throwaway directory, a live process's resource figures (Linux
``/proc``), the percentile (``meta_memory.stats``: the product's own), and the ``--candidate-limits`` option's parser.

The benchmarks run as scripts (``python benchmarks/<name>.py``), so this module is imported by
its bare name from the ``benchmarks`` folder.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, NamedTuple

import httpx

from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.stats import percentile

__all__ = ["ProcStats", "candidate_limits", "percentile", "proc_cpu_s", "proc_stats", "start_gateway", "stop_gateway", "temp_store"]


def start_gateway(state_dir: Path, *, config: Path | None = None, log: Path | None = None,
                  timeout_s: float = 30.0) -> tuple[subprocess.Popen[str], str]:
    """``meta-memory serve --port 0`` on ``state_dir`` (with ``--config`` when given); waits for its
    URL line and its health endpoint. Returns the process and its base URL (``http://127.0.0.1:<port>``).
    Its stderr goes to ``log`` (never an unread pipe), or nowhere. Raises ``RuntimeError`` when it
    does not start."""
    args = [sys.executable, "-m", "meta_memory.cli", "serve", "--port", "0", "--state-dir", str(state_dir)]
    if config is not None:
        args += ["--config", str(config)]
    err: IO[str] | int = subprocess.DEVNULL
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        err = open(log, "w")  # noqa: SIM115 - owned by the child
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "listening on " not in line:
        proc.kill()
        raise RuntimeError(f"gateway did not start: {line!r}")
    url = line.split("listening on ", 1)[1].split()[0]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/v1/health", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"gateway at {url} never answered /v1/health")


def stop_gateway(proc: subprocess.Popen[str], timeout_s: float = 15.0) -> None:
    """SIGTERM, then SIGKILL when it has not exited after ``timeout_s``."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def temp_store(*, gate: Any = None) -> Iterator[tuple[SqliteAgentMemoryStore, ManualClock, Path]]:
    """``(store, clock, root)``: the bundled SQLite store on a fresh temporary directory ``root``,
    with write gate ``gate`` and a :class:`ManualClock` at 1,700,000,000,000 ms; the store is closed
    and the directory removed when the block ends."""
    with tempfile.TemporaryDirectory() as tmp:
        clock = ManualClock(1_700_000_000_000)
        store = SqliteAgentMemoryStore(Path(tmp), clock, gate=gate)
        try:
            yield store, clock, Path(tmp)
        finally:
            store.close()


class ProcStats(NamedTuple):
    """A live process's resident memory (KiB), open file descriptors and threads."""

    rss_kib: int
    fds: int
    threads: int


def proc_stats(pid: int) -> ProcStats:
    """:class:`ProcStats` of ``pid`` (Linux ``/proc``)."""
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return ProcStats(int(status["VmRSS"].split()[0]), len(os.listdir(f"/proc/{pid}/fd")), int(status["Threads"]))


def proc_cpu_s(pid: int) -> float:
    """CPU seconds (user + system, every thread) ``pid`` has used so far (Linux ``/proc``, clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def candidate_limits(text: str) -> list[int]:
    """An argparse type: comma-separated ``candidate_limit`` values (``"100,64,32"``), each 1..10000
    (:class:`meta_memory.recall.lexical.LexicalConfig`'s range)."""
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}") from None
    if not values or any(not 1 <= v <= 10_000 for v in values):
        raise argparse.ArgumentTypeError("each candidate limit must be in 1..10000")
    return values
