"""``meta/storage/backup`` and ``meta/storage/export``: an operator's copies of a running gateway.

Both need the ``operator.backup`` grant (unscoped) under ``[access]``: a backup or an export is a
copy of memory, quarantined content and provenance included. What is copied is judged too
(:func:`~meta_memory.access.requirements.copy_of`): an export naming a realm and an identity needs
``operator.backup`` on that identity, so label, role and identity denies apply to it; a backup, and an
export of more than one identity's realm-qualified scope, is refused to a caller under any deny of
``operator.backup`` that could match a copied scope. See ``docs/deployment.md``
("Backup and restore") and ``docs/rpc.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator, model_validator

from ...access.requirements import copy_of
from ...errors import InvalidParams
from ...identity import parse_identity, parse_realm
from ...limits import MAX_PATH_BYTES
from ...storage.backup import BackupError, check_dest_text
from ..params import MembersRule, Params, required_text
from ..registry import CallContext, MethodTable
from ..results import BackupResult, ExportPageResult

if TYPE_CHECKING:  # pragma: no cover
    from ...runtime import Runtime

__all__ = ["BackupParams", "ExportParams", "register"]

EXPORT_PAGE_BYTES = 1 << 20
MAX_EXPORT_PAGE_BYTES = 8 << 20
MIN_EXPORT_PAGE_BYTES = 64 << 10


class BackupParams(Params):
    """``dest``: the new directory to write, on the gateway's machine, inside ``[gateway] backup_dir``: an
    absolute path, or a path relative to ``backup_dir`` (never to the gateway's working directory)."""

    dest: Any = required_text(description="path of a new directory inside [gateway] backup_dir: absolute, or "
                                          "relative to backup_dir")

    @field_validator("dest", mode="before")
    @classmethod
    def _dest(cls, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ValueError("dest must be a non-empty string")
        if len(value.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
            raise ValueError(f"dest must be at most {MAX_PATH_BYTES} bytes")
        try:
            # no ``..``, lengths a file system takes, no control or invisible character: refused before the disk is read
            check_dest_text(value)
        except BackupError as exc:
            raise ValueError(exc.rule) from None
        return value


class ExportParams(Params):
    """Start an export (``realm``, ``identity``, ``ledger`` as ``meta-memory export`` takes them) or
    fetch the next page of one (``export_id`` alone); ``max_bytes`` bounds the page."""

    export_id: str | None = None
    realm: Any = Field(default=None, json_schema_extra={"type": "string"})
    identity: Any = Field(default=None, json_schema_extra={"type": "string"})
    ledger: bool | None = None
    max_bytes: int = Field(default=EXPORT_PAGE_BYTES)

    @field_validator("realm", mode="before")
    @classmethod
    def _realm(cls, value: Any) -> str | None:
        return None if value is None else parse_realm(value)

    @field_validator("identity", mode="before")
    @classmethod
    def _identity(cls, value: Any) -> str | None:
        return None if value is None else parse_identity(value)

    @field_validator("export_id")
    @classmethod
    def _export_id(cls, value: str | None) -> str | None:
        if value is not None and not (len(value) == 24 and all(c in "0123456789abcdef" for c in value)):
            raise ValueError("export_id must be the id an earlier call returned (24 hex digits)")
        return value

    @field_validator("max_bytes")
    @classmethod
    def _max_bytes(cls, value: int) -> int:
        if not MIN_EXPORT_PAGE_BYTES <= value <= MAX_EXPORT_PAGE_BYTES:
            raise ValueError(f"max_bytes must be between {MIN_EXPORT_PAGE_BYTES} and {MAX_EXPORT_PAGE_BYTES}")
        return value

    @model_validator(mode="after")
    def _continuation_alone(self) -> "ExportParams":
        if self.export_id is not None and (self.realm is not None or self.identity is not None or self.ledger is not None):
            raise MembersRule("a page of a started export takes export_id alone (its filters were set at the start)",
                              "export_id")
        return self


def _owner(ctx: CallContext) -> str:
    return str(getattr(ctx.principal, "name", None) or "anonymous")


def register(table: MethodTable) -> None:
    @table.method("meta/storage/backup", BackupParams, requires=copy_of("operator.backup"), mutating=False,
                  result=BackupResult)
    def backup(runtime: "Runtime", ctx: CallContext, p: BackupParams) -> dict[str, Any]:
        """Write a consistent copy of the state directory into the new directory ``dest`` while serving.

        ``dest`` must lie inside ``[gateway] backup_dir`` (the method is refused without it) and must
        not exist; a relative ``dest`` is joined to ``backup_dir`` first (then held to the same rule, so
        one that leads out is refused). One backup runs at a time (``capacity_exceeded`` otherwise)."""
        root = runtime.config.gateway.backup_dir
        if root is None:
            raise InvalidParams("backups over RPC are off: set [gateway] backup_dir to the directory they may be "
                                "written in, or run `meta-memory backup --state-dir` on a stopped installation",
                                "dest")
        return runtime.backup(Path(root) / p.dest, root=Path(root)).to_dict()  # an absolute dest stays itself

    @table.method("meta/storage/export", ExportParams, requires=copy_of("operator.backup"), mutating=False,
                  result=ExportPageResult)
    def export(runtime: "Runtime", ctx: CallContext, p: ExportParams) -> dict[str, Any]:
        """The export file (``meta-memory export``) a page of lines at a time: start, then fetch by
        ``export_id`` until ``done``."""
        owner = _owner(ctx)
        export_id = p.export_id
        if export_id is None:
            include_ledger = p.ledger if p.ledger is not None else (p.realm is None and p.identity is None)
            export_id = runtime.exports.start(owner, realm=p.realm, identity=p.identity, ledger=include_ledger)
        return runtime.exports.fetch(owner, export_id, p.max_bytes)
