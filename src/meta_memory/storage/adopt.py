"""``meta-memory storage-adopt-predecessor``: adopt a predecessor's ledger file, once.

Seed: "The runtime owns the assertion ledger" (adoption); spec README ("Where
the seed and the reference differ").

Adoption renames ``<state>/elephant-memory-state.json`` in place to
``<state>/memory-ledger-state.json``, byte for byte (a rename, so the bytes,
mode and owner are kept), then fsyncs the directory. Without ``apply`` it
only reports what it would do. It refuses to touch a leftover ``.tmp`` stage
of an interrupted write, a ``memory-ledger-state.json`` already present, or a predecessor file
the ledger cannot read (not valid JSON, an entry of the wrong shape): adopted, it would block every
start.
Run it with every gateway on the directory stopped: ``apply`` takes the directory's lock (the one every
runtime takes, its ``meta-memory.lock`` created when absent) for the whole adoption, so a runtime holding
it refuses the adoption (nothing renamed), as it refuses a second runtime, and a runtime starting while
the adoption runs is refused until it is done.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from meta_memory.errors import StartupError
from meta_memory.storage.layout import StorageLayout
from meta_memory.storage.lock import held_in_place

__all__ = ["AdoptReport", "adopt_predecessor"]


@dataclass(frozen=True)
class AdoptReport:
    """What adoption did, or would do.

    Attributes:
        state_dir: the directory examined.
        source: the predecessor ledger path.
        target: the ledger path it becomes.
        action: ``"nothing_to_adopt"``, ``"would_rename"`` (dry run) or ``"renamed"``.
        applied: whether anything was changed.
        size_bytes: size of the adopted file (``None`` when there was nothing to adopt).
        lines: human-readable summary, one line each, for the CLI to print.
    """

    state_dir: str
    source: str
    target: str
    action: str
    applied: bool
    size_bytes: int | None
    lines: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def adopt_predecessor(state_dir: Path, apply: bool) -> AdoptReport:
    """Adopt ``<state_dir>/elephant-memory-state.json`` as ``memory-ledger-state.json``.

    Args:
        state_dir: the persistent state directory.
        apply: rename for real; otherwise report only and change nothing.

    Returns:
        An :class:`AdoptReport`; ``action`` is ``nothing_to_adopt`` when there is
        no predecessor file (not an error).

    Raises:
        StartupError: ``state_dir`` is not a directory; a leftover stage
            (``elephant-memory-state.tmp`` or ``memory-ledger-state.tmp``)
            exists; ``memory-ledger-state.json`` already exists beside the
            predecessor file; the predecessor file is not a ledger this runtime reads (unreadable,
            not valid JSON, an entry of the wrong shape: the message names why). Raised with and
            without ``apply``; nothing is renamed. With ``apply``, also: another process (a gateway, an SDK
            handle, an MCP server) holds the directory (the lock's refusal, naming its pid).
        OSError: the rename or the directory fsync failed.
    """
    layout = StorageLayout(Path(state_dir))
    source = layout.predecessor_ledger_path
    target = layout.ledger_path
    base = {"state_dir": str(layout.state_dir), "source": str(source), "target": str(target)}
    if not layout.state_dir.is_dir():
        raise StartupError(f"state directory {layout.state_dir} does not exist or is not a directory")
    if not apply:
        return _examine(layout, base, apply=False)
    # the rename happens under the directory's lock, as every command that changes a state directory holds
    # it: a gateway running on it keeps its own ledger in memory and its next write would replace the
    # adopted file, losing every assertion in it
    with held_in_place(layout.state_dir):  # no mode changed, no directory created: adoption is byte for byte
        return _examine(layout, base, apply=True)


def _examine(layout: StorageLayout, base: dict[str, str], *, apply: bool) -> AdoptReport:
    """:func:`adopt_predecessor` past its directory check (the caller holds the lock when ``apply``)."""
    source = layout.predecessor_ledger_path
    target = layout.ledger_path
    if not source.is_file():
        return AdoptReport(
            **base,
            action="nothing_to_adopt",
            applied=False,
            size_bytes=None,
            lines=[f"no predecessor ledger in {layout.state_dir}: nothing to adopt"],
        )
    for stage in (layout.predecessor_stage_path, layout.ledger_stage_path):
        if stage.exists():
            raise StartupError(
                f"refusing to adopt: {stage} is left over from an interrupted write; inspect it and "
                f"remove it (the committed ledger is {source}), then run adoption again"
            )
    if target.exists():
        raise StartupError(
            f"refusing to adopt: {target} already exists beside {source}; keep the one you want "
            "and move the other out of the state directory, then run adoption again"
        )
    from meta_memory.ledger import persistence

    if (bad := persistence.problem(source)) is not None:
        # adopted as it is, it would block every start (a malformed ledger): refuse it, nothing renamed
        raise StartupError(
            f"refusing to adopt: {source} is not a ledger this runtime can read ({bad}); nothing was renamed. "
            "Fix what the message names in the file (or restore it from a backup), then run adoption again"
        )
    size = source.stat().st_size
    if not apply:
        return AdoptReport(
            **base,
            action="would_rename",
            applied=False,
            size_bytes=size,
            lines=[
                f"would rename {source} -> {target} ({size} bytes, unchanged)",
                "nothing changed; run again with --apply to adopt",
            ],
        )
    os.rename(source, target)
    _fsync_dir(layout.state_dir)
    return AdoptReport(
        **base,
        action="renamed",
        applied=True,
        size_bytes=size,
        lines=[f"renamed {source} -> {target} ({size} bytes, unchanged)"],
    )
