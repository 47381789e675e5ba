"""Content-trust classification of tool results (seed: "Content trust and session taint").

A tool result that enters a model's context is either *trusted* or *untrusted*
for memory purposes. Untrusted content taints the session that ingested it
(see :mod:`meta_memory.firewall.taint`). The decision is deterministic and
depends only on the tool name, the tool's typed provenance (when the host
knows it) and the configured :class:`ContentTrustPolicy`.

Precedence, first match wins (seed; reference notes §5):

1. provider-native server-tool content (``server_tool=True``): untrusted, always;
2. an always-untrusted builtin name (``web_search``, ``web_fetch``, ``fetch``,
   ``http_request``): untrusted, and no policy entry can override it;
3. a name in ``untrusted_tools``: untrusted;
4. a name in ``trusted_tools``: trusted;
5. typed MCP provenance (``kind == "mcp"``): the server is ``source_id``, even
   when the tool name is unqualified; trusted only if the server is in
   ``trusted_mcp_servers``;
6. when provenance is absent or not MCP, a qualified ``mcp__<server>__<tool>``
   name: the server is the text between ``mcp__`` and the next ``__`` (the whole
   rest when there is none); trusted only if listed in ``trusted_mcp_servers``;
7. anything else: trusted.

Tool names and policy entries match exactly (case-sensitive). Tool results and
tool *errors* classify the same way: an error body is still text from the
source.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from meta_memory.errors import InvalidParams

__all__ = [
    "ALWAYS_UNTRUSTED_TOOLS",
    "MCP_PREFIX",
    "Classification",
    "ContentTrustPolicy",
    "ToolProvenance",
    "classify_tool_result",
    "mcp_server_of",
]

#: Builtin web-facing tool names that are untrusted whatever the policy says.
ALWAYS_UNTRUSTED_TOOLS: frozenset[str] = frozenset({"web_search", "web_fetch", "fetch", "http_request"})

#: Prefix of a server-qualified MCP tool name, ``mcp__<server>__<tool>``.
MCP_PREFIX = "mcp__"

_POLICY_KEYS = ("trusted_mcp_servers", "untrusted_tools", "trusted_tools")


@dataclass(frozen=True, slots=True)
class ToolProvenance:
    """Typed owner of a tool, as the host's tool catalog knows it.

    Attributes:
        kind: the owner kind, e.g. ``"mcp"``, ``"builtin"``, ``"memory"``,
            ``"function"``. Only ``"mcp"`` changes classification.
        source_id: the owner's id; for ``kind == "mcp"`` it is the MCP server name.
    """

    kind: str
    source_id: str = ""

    @property
    def is_mcp(self) -> bool:
        """True when the tool belongs to an MCP server (``kind`` is ``mcp``, any case)."""
        return self.kind.strip().lower() == "mcp"

    @classmethod
    def parse(cls, value: object, field: str = "provenance") -> ToolProvenance | None:
        """Parse the wire shape ``{kind, source_id?}`` (``None`` when absent).

        Raises :class:`~meta_memory.errors.InvalidParams` naming ``field`` when the
        value is not an object, ``kind`` is not a non-empty string, ``source_id`` is
        not a string, unknown keys are present, or an MCP provenance has no
        ``source_id`` (an MCP tool without a server cannot be attributed).
        """
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise InvalidParams(f"{field} must be an object with kind and source_id", field)
        unknown = sorted(str(k) for k in value if k not in ("kind", "source_id"))
        if unknown:
            raise InvalidParams(f"unsupported {field} fields: {', '.join(unknown)}", field)
        kind = value.get("kind")
        if not isinstance(kind, str) or not kind.strip():
            raise InvalidParams(f"{field}.kind must be a non-empty string", f"{field}.kind")
        source_id = value.get("source_id", "")
        if source_id is None:
            source_id = ""
        if not isinstance(source_id, str):
            raise InvalidParams(f"{field}.source_id must be a string", f"{field}.source_id")
        provenance = cls(kind=kind.strip(), source_id=source_id.strip())
        if provenance.is_mcp and not provenance.source_id:
            raise InvalidParams(f"{field}.source_id must name the MCP server", f"{field}.source_id")
        return provenance


@dataclass(frozen=True, slots=True)
class Classification:
    """The verdict for one tool result.

    Attributes:
        trusted: False when the content must taint the ingesting session.
        source: for untrusted content, the human-readable source that becomes
            the taint source (e.g. ``"web tool 'web_fetch'"``); ``None`` when trusted.
    """

    trusted: bool
    source: str | None = None

    @classmethod
    def untrusted(cls, source: str) -> Classification:
        """An untrusted verdict naming its ``source``."""
        return cls(trusted=False, source=source)


TRUSTED = Classification(trusted=True)


def _names(value: object, key: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ValueError(f"content_trust.{key} must be an array")
    out: set[str] = set()
    for entry in value:
        if not isinstance(entry, str) or not entry.strip():
            raise ValueError(f"content_trust.{key} entries must be non-empty strings")
        out.add(entry.strip())
    return frozenset(out)


@dataclass(frozen=True, slots=True)
class ContentTrustPolicy:
    """The ``agent_memory.content_trust`` policy as three exact-match name sets.

    Attributes:
        trusted_mcp_servers: MCP servers whose tools do not taint.
        untrusted_tools: tool names that always taint (after the builtins).
        trusted_tools: tool names that never taint, unless they are builtin web
            tools or also listed in ``untrusted_tools``.
    """

    trusted_mcp_servers: frozenset[str] = frozenset()
    untrusted_tools: frozenset[str] = frozenset()
    trusted_tools: frozenset[str] = frozenset()

    @classmethod
    def from_config(cls, config: object) -> ContentTrustPolicy:
        """Build a policy from any config shape.

        Accepts ``None`` (empty policy), a :class:`ContentTrustPolicy`, a mapping
        with the three keys, or any object with the three list attributes (the
        config model's ``content_trust``). Entries are trimmed. Raises
        ``ValueError`` (``content_trust.<key> must be an array`` /
        ``content_trust.<key> entries must be non-empty strings``) on bad shapes.
        """
        if config is None:
            return cls()
        if isinstance(config, ContentTrustPolicy):
            return config
        if isinstance(config, Mapping):
            unknown = sorted(str(k) for k in config if k not in _POLICY_KEYS)
            if unknown:
                raise ValueError(f"unsupported content_trust fields: {', '.join(unknown)}")
            values = {key: config.get(key) for key in _POLICY_KEYS}
        else:
            values = {key: getattr(config, key, None) for key in _POLICY_KEYS}
        return cls(**{key: _names(values[key], key) for key in _POLICY_KEYS})


def mcp_server_of(tool_name: str) -> str | None:
    """The server of a qualified ``mcp__<server>__<tool>`` name, else ``None``.

    ``mcp__kg__query`` -> ``kg``; ``mcp__kg`` -> ``kg`` (no second separator: the
    whole rest); ``search`` -> ``None``.
    """
    if not tool_name.startswith(MCP_PREFIX):
        return None
    rest = tool_name[len(MCP_PREFIX) :]
    return rest.split("__", 1)[0]


def _server_verdict(server: str, tool_name: str, policy: ContentTrustPolicy) -> Classification:
    if server in policy.trusted_mcp_servers:
        return TRUSTED
    return Classification.untrusted(f"MCP server '{server}' (tool '{tool_name}')")


def classify_tool_result(
    tool_name: str,
    provenance: ToolProvenance | None,
    policy: ContentTrustPolicy,
    *,
    server_tool: bool = False,
) -> Classification:
    """Classify one tool result for memory purposes (precedence in the module docstring).

    Args:
        tool_name: the tool's name as the model called it (exact match, no trimming).
        provenance: the tool catalog's typed owner, or ``None`` when unknown.
        policy: the configured content-trust policy (any object with the three
            name collections is accepted, see :meth:`ContentTrustPolicy.from_config`).
        server_tool: True for provider-native server-tool content (a provider's
            own web search or grounding); such content is always untrusted and
            ``tool_name`` names the provider tool.

    Returns:
        :class:`Classification`; untrusted sources read ``provider server tool '<n>'``,
        ``web tool '<n>'``, ``configured untrusted tool '<n>'`` or
        ``MCP server '<server>' (tool '<n>')``.
    """
    if not isinstance(policy, ContentTrustPolicy):
        policy = ContentTrustPolicy.from_config(policy)
    if server_tool:
        return Classification.untrusted(f"provider server tool '{tool_name}'")
    if tool_name in ALWAYS_UNTRUSTED_TOOLS:
        return Classification.untrusted(f"web tool '{tool_name}'")
    if tool_name in policy.untrusted_tools:
        return Classification.untrusted(f"configured untrusted tool '{tool_name}'")
    if tool_name in policy.trusted_tools:
        return TRUSTED
    if provenance is not None and provenance.is_mcp:
        return _server_verdict(provenance.source_id, tool_name, policy)
    server = mcp_server_of(tool_name)
    if server is not None:
        return _server_verdict(server, tool_name, policy)
    return TRUSTED

