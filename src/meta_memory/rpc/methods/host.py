"""The host surface: ``meta/session/*``, ``meta/turn/*``, ``meta/agent_memory/tool|tool_schema`` (spec README)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator, model_validator

from ...access.requirements import (
    SIGHT,
    Requirement,
    anywhere,
    identity_needs,
    identity_resource,
    on_identity,
    requires,
)
from ...access.resources import Resources
from ...errors import InvalidParams
from ...firewall.classify import PROVENANCE_KINDS
from ...identity import parse_mob
from ...limits import MAX_SESSION_KEY_BYTES
from ...recall.query_limits import truncate_query_text
from ...session_ref import SessionRef
from ..params import MembersRule, Params
from ..registry import CallContext, MethodTable, Refused
from ..results import (
    CompactedResult,
    DefangResult,
    InjectResult,
    SessionResult,
    ToolCallResult,
    ToolResultVerdict,
    ToolSchemaResult,
)
from ..session_params import KeyedSessionParams, SessionMembers, SessionParams
from .agent_memory import agent_memory_enabled, agent_memory_off, caller_manages

if TYPE_CHECKING:  # pragma: no cover
    from ...features import AgentMemoryFeature
    from ...runtime import Runtime
    from ...services.host import HostService

MAX_TEXT_BYTES = 1_048_576
#: Most content blocks one ``meta/turn/defang`` call takes (their texts together stay under ``MAX_TEXT_BYTES``).
MAX_DEFANG_BLOCKS = 1024
#: Most mob names one ``meta/turn/inject`` (build surface) call takes.
MAX_INJECT_MOBS = 64


def _text_bytes(value: str) -> int:
    return len(value.encode("utf-8", "surrogatepass"))


def _name(value: str | None, name: str, required: bool) -> str | None:
    """A short name member (``tool_name``): trimmed, non-empty, at most 512 bytes."""
    if value is None:
        if required:
            raise ValueError(f"{name} must be a non-empty string")
        return None
    text = value.strip()
    if not text or len(text.encode("utf-8", "surrogatepass")) > MAX_SESSION_KEY_BYTES:
        raise ValueError(f"{name} must be a non-empty string of at most {MAX_SESSION_KEY_BYTES} bytes")
    return text


class SessionNoteParams(KeyedSessionParams):
    """``{identity, session_key, realm?, tool_results?}``."""

    #: ``"unreported"``: this session's tool results never reach ``meta/turn/tool_result`` (fail closed: tainted).
    tool_results: Literal["reported", "unreported"] = "reported"


class SessionResetParams(SessionParams):
    """``{identity, session_key?, realm?}`` (no ``session_key``: the identity's current session)."""


class SessionCompactedParams(KeyedSessionParams):
    """``{identity, session_key, realm?}``: compaction of that identity's session (identity required)."""


class Provenance(Params):
    """``{kind, source_id?, session_key?}`` (``ToolProvenance.parse`` holds the rules: ``kind`` one of
    ``PROVENANCE_KINDS`` in any case, another refused; ``session_key`` only with ``kind: "agent"`` and its
    ``source_id``)."""

    kind: str = Field(description=f"the tool's owner: one of {', '.join(PROVENANCE_KINDS)} (any case); "
                                  "another kind is refused, and the refusal taints the session")
    source_id: str | None = None
    session_key: str | None = None


class ToolResultParams(KeyedSessionParams):
    """``{identity, session_key, realm?, tool_name, provenance?, is_error?, server_tool?}``."""

    tool_name: str
    provenance: Provenance | None = None
    is_error: bool = False
    server_tool: bool = False

    @field_validator("tool_name")
    @classmethod
    def _tool_name(cls, value: str) -> str:
        return _name(value, "tool_name", True) or ""


class InjectParams(SessionParams):
    """``{identity, realm?, session_key?, query_text?, surface?, mobs?, operator?}``."""

    query_text: str = ""
    surface: Literal["turn", "build"] = "turn"
    mobs: list[str] = Field(default_factory=list)
    operator: str | None = None

    @field_validator("mobs")
    @classmethod
    def _mobs(cls, value: list[str]) -> list[str]:
        if len(value) > MAX_INJECT_MOBS:
            raise ValueError(f"mobs must contain at most {MAX_INJECT_MOBS} entries")
        return [parse_mob(mob, f"mobs[{i}]") for i, mob in enumerate(value)]

    @field_validator("query_text")
    @classmethod
    def _query_text(cls, value: str) -> str:
        if len(value.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES:
            raise ValueError(f"query_text must be at most {MAX_TEXT_BYTES} bytes")
        return truncate_query_text(value)  # the one query-size rule: a turn searches with its first 16 KiB


class DefangParams(Params):
    """``meta/turn/defang``: exactly one of ``text`` (at most 1 MiB) or ``blocks`` (at most 1,024 content
    blocks, each a string or a JSON object; their ``text`` strings together at most 1 MiB)."""

    text: str | None = None
    blocks: list[Any] | None = None

    @field_validator("text")
    @classmethod
    def _text(cls, value: str | None) -> str | None:
        if value is not None and _text_bytes(value) > MAX_TEXT_BYTES:
            raise ValueError(f"text must be at most {MAX_TEXT_BYTES} bytes")
        return value

    @field_validator("blocks")
    @classmethod
    def _blocks(cls, value: list[Any] | None) -> list[Any] | None:
        if value is None:
            return None
        if len(value) > MAX_DEFANG_BLOCKS:
            raise ValueError(f"blocks must contain at most {MAX_DEFANG_BLOCKS} entries")
        total = 0
        for block in value:
            if isinstance(block, str):
                total += _text_bytes(block)
            elif isinstance(block, dict):
                text = block.get("text")
                total += _text_bytes(text) if isinstance(text, str) else 0
            else:
                raise ValueError("blocks entries must be strings or JSON objects")
        if total > MAX_TEXT_BYTES:
            raise ValueError(f"blocks texts must be at most {MAX_TEXT_BYTES} bytes together")
        return value

    @model_validator(mode="after")
    def _one_of(self) -> "DefangParams":
        if (self.text is None) == (self.blocks is None):
            raise MembersRule("exactly one of text or blocks is required", "params" if self.text is None else "blocks")
        return self


class ToolParams(SessionParams):
    """``{identity, realm?, session_key?, mob?, arguments}``: one ``memory`` tool call."""

    mob: str | None = None
    arguments: dict[str, Any]
    _m = field_validator("mob", mode="before")(lambda cls, v: None if v is None else parse_mob(v))

    @property
    def action(self) -> str | None:
        """``arguments.action`` trimmed and lower-cased (``None`` when absent or not a string)."""
        value = self.arguments.get("action")
        return value.strip().lower() if isinstance(value, str) else None


@requires("by arguments.action on the identity: recall => agent.memory.read + agent.view; forget => "
          "agent.memory.delete + read + view; any other => agent.memory.write + read + view (a reply tells what "
          "the identity holds); every action but recall also agent.session.manage (it passes the session's write "
          "gate, whose verdict its reply tells); propose_to_mob with a mob also mob.memory.propose on that mob; "
          "recall with a mob also mob.memory.read on that mob (it searches the mob's records too); "
          "all in the call's realm",
          entry=[["agent.memory.read"], ["agent.view"]])
def _tool_requires(p: ToolParams, resources: Resources) -> list[Requirement]:
    res = identity_resource(p, resources)
    if p.action == "recall":
        needs = [Requirement(a, res) for a in SIGHT]
        if p.mob:  # the mob's records too: what lets inject list them (a build's mob section)
            needs.append(Requirement("mob.memory.read", resources.mob(p.realm, p.mob)))
        return needs
    # a write's reply names the session's taint ("QUARANTINED (session tainted by ...)", a held forget's
    # reason): it needs what reading that taint needs, as a remember naming derived_from_sessions does
    action = "agent.memory.delete" if p.action == "forget" else "agent.memory.write"
    needs = [Requirement(a, res) for a in (*identity_needs(action), "agent.session.manage")]
    if p.action == "propose_to_mob" and p.mob:
        needs.append(Requirement("mob.memory.propose", resources.mob(p.realm, p.mob)))
    return needs


@requires("agent.memory.read + agent.view on the identity; with a session_key also agent.session.manage "
          "on it (the injection spends that session's dedup set and byte budget)",
          entry=[["agent.memory.read"], ["agent.view"]])
def _inject_requires(p: InjectParams, resources: Resources) -> list[Requirement]:
    res = identity_resource(p, resources)
    needs = [Requirement("agent.memory.read", res), Requirement("agent.view", res)]
    if p.session_key is not None:
        needs.append(Requirement("agent.session.manage", res))
    return needs


#: Why the tool methods are missing when they are.
def tool_off(runtime: "Runtime") -> str:
    """Why the ``memory`` tool methods are not advertised on ``runtime``: agent memory is off
    (:func:`~meta_memory.rpc.methods.agent_memory.agent_memory_off`), or ``agent_memory.recorder_tool = false``."""
    if runtime.agent_memory is None:
        return agent_memory_off(runtime)
    return "not advertised: agent_memory.recorder_tool = false"


def register(table: MethodTable) -> None:
    on = agent_memory_enabled

    def feature(runtime: "Runtime") -> "AgentMemoryFeature":
        """The runtime's agent memory (the host methods are advertised only while it is wired)."""
        wired: AgentMemoryFeature | None = getattr(runtime, "agent_memory", None)
        if wired is None:  # pragma: no cover - ``available=on`` keeps such calls out
            raise RuntimeError("agent memory is not wired on this runtime")
        return wired

    def host(runtime: "Runtime") -> "HostService":
        return feature(runtime).host

    def session(runtime: "Runtime", ctx: CallContext, p: SessionParams) -> SessionRef:
        """The session ``p`` names; its realm defaults to ``[agent_memory] realm`` (the realm access
        control judged when the call named none); a key holding a credential is named by its digest
        (:meth:`SessionParams.session_ref`). Every identity's taint of its key counts for its writes,
        unless ``[agent_memory] shared_key_taint = "managed"`` under access control: then only the taint
        of identities whose sessions the caller manages (``agent.session.manage``), so an identity of
        another principal can neither quarantine this session's writes by tainting the same key nor
        learn through them whether it did."""
        return p.session_ref(feature(runtime).config.realm, lambda: runtime.access.digest_secret,
                             caller_manages(runtime, ctx))

    manage = on_identity("agent.session.manage")
    host_token = anywhere("agent.session.manage")

    def tool_on(runtime: "Runtime") -> bool:
        """The ``memory`` tool methods exist only with ``agent_memory.recorder_tool = true``."""
        return on(runtime) and feature(runtime).tool is not None

    @table.method("meta/session/note", SessionNoteParams, requires=manage, mutating=True, available=on,
                  unavailable_hint=agent_memory_off,
                  result=SessionResult)
    def session_note(runtime: "Runtime", ctx: CallContext, p: SessionNoteParams) -> dict[str, Any]:
        """The identity now speaks from ``session_key`` (a new key starts a clean session, unless
        ``tool_results = "unreported"``: then the gateway cannot know its taint and treats it as tainted)."""
        return host(runtime).note(session(runtime, ctx, p), p.tool_results)

    @table.method("meta/session/reset", SessionResetParams, requires=manage, mutating=True, available=on,
                  unavailable_hint=agent_memory_off,
                  result=SessionResult)
    def session_reset(runtime: "Runtime", ctx: CallContext, p: SessionResetParams) -> dict[str, Any]:
        """Fresh-context boundary of the identity's own session: clears its taint and injection state."""
        return host(runtime).reset(session(runtime, ctx, p))

    @table.method("meta/session/compacted", SessionCompactedParams, requires=manage, mutating=True,
                  available=on, unavailable_hint=agent_memory_off,
                  result=CompactedResult)
    def session_compacted(runtime: "Runtime", ctx: CallContext, p: SessionCompactedParams) -> dict[str, Any]:
        """The identity's session was compacted: taint kept, injection dedup and byte budget cleared."""
        return host(runtime).compacted(session(runtime, ctx, p))

    def tool_result_refused(runtime: "Runtime", ctx: CallContext, p: SessionMembers, refusal: InvalidParams) -> None:
        """A refused report is still a tool result the host may show its model: its session is tainted
        (fail closed), the source naming the refusal."""
        host(runtime).tool_result_refused(session(runtime, ctx, p), refusal.field, refusal.rule)

    @table.method("meta/turn/tool_result", ToolResultParams, requires=manage, mutating=True, available=on,
                  unavailable_hint=agent_memory_off,
                  result=ToolResultVerdict, refused=Refused(SessionMembers, tool_result_refused))
    def tool_result(runtime: "Runtime", ctx: CallContext, p: ToolResultParams) -> dict[str, Any]:
        """Classify a tool result before the model sees it: ``{trusted, source?, session_tainted}``.

        Refused params (``-32602`` naming the field: ``tool_name`` empty or over 512 bytes, a bad
        ``provenance``, ``is_error``/``server_tool`` not booleans, an unknown member) still taint the
        session they name, ``tool result refused: <rule>``, when ``identity``, ``realm`` and
        ``session_key`` are valid and the caller holds ``agent.session.manage`` on that identity
        (docs/security.md, "A refused report taints")."""
        prov = p.provenance.model_dump() if p.provenance is not None else None
        access = runtime.access
        may_read_agent = None if not access.enabled else (
            lambda realm, ident: access.holds_on_identity(ctx.principal, "agent.session.manage", realm, ident))
        return host(runtime).tool_result(session(runtime, ctx, p), p.tool_name, prov, p.is_error, p.server_tool,
                                         may_read_agent)

    @table.method("meta/turn/inject", InjectParams, requires=_inject_requires,
                  mutating=True, available=on, unavailable_hint=agent_memory_off,
                  result=InjectResult)
    def turn_inject(runtime: "Runtime", ctx: CallContext, p: InjectParams) -> dict[str, Any]:
        """The quoted observation block for this turn/build, or a typed ``skip_reason``."""
        may_read = runtime.access.visibility(ctx.principal).scope if runtime.access.enabled else None
        return host(runtime).inject(session(runtime, ctx, p), p.query_text, p.surface, p.mobs, p.operator,
                                    may_read=may_read)

    @table.method("meta/turn/defang", DefangParams, requires=host_token, mutating=False, available=on,
                  unavailable_hint=agent_memory_off,
                  result=DefangResult)
    def turn_defang(runtime: "Runtime", ctx: CallContext, p: DefangParams) -> dict[str, Any]:
        """Neutralise forged memory markers in inbound text: ``{text, hits}``."""
        return host(runtime).defang(p.text, p.blocks)

    @table.method("meta/agent_memory/tool_schema", requires=host_token, mutating=False, available=tool_on,
                  unavailable_hint=tool_off,
                  result=ToolSchemaResult)
    def tool_schema(runtime: "Runtime", ctx: CallContext, p: Any) -> dict[str, Any]:
        """The ``memory`` tool definition for a host to offer its model."""
        return host(runtime).tool_schema()

    @table.method("meta/agent_memory/tool", ToolParams, requires=_tool_requires,
                  mutating=lambda p: p.action != "recall", available=tool_on, unavailable_hint=tool_off,
                  result=ToolCallResult)
    def tool(runtime: "Runtime", ctx: CallContext, p: ToolParams) -> dict[str, Any]:
        """Dispatch one ``memory`` tool call (an LLM-authored write, gated by the firewall).

        Every action acts in the call's realm (``[agent_memory] realm`` when it names none): the
        write gate reads that realm's taint of the session, the record, held forget or proposal
        lands there, and access control judges ``<realm>/<identity>``: every action needs read + view
        there (a reply tells what the identity holds), every action but ``recall`` also its write or
        delete grant and ``agent.session.manage`` (a reply tells the session's taint), and
        ``propose_to_mob`` ``mob.memory.propose`` on the target mob of that realm, and ``recall`` with a
        ``mob`` ``mob.memory.read`` on that mob (declared in ``_tool_requires``, docs/access.md "Writing
        needs reading"): -32030 otherwise, and nothing is written, queued or read.

        ``recall`` with a ``mob`` searches the identity's records and that mob's (the records a build's
        ``mobs`` lists in its index), each under the identity recall's rules: active records only.
        """
        return host(runtime).dispatch_tool(session(runtime, ctx, p), p.mob, p.arguments)
