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
   rest when there is none); trusted only if listed in ``trusted_mcp_servers``.
   (Beyond the spec, stricter) the other hosts' spellings of a qualified MCP name,
   ``mcp`` and one separator (``mcp_github_get_issue``, ``mcp-fetch-fetch``,
   ``mcp.kg.query``, ``mcp/kg/query``, ``mcp:kg:query``), are MCP names too, always
   untrusted (named by the first segment): where their server ends is not marked, so
   no listed server can be told from another whose name it begins. Typed provenance
   (rule 5) or a ``trusted_tools`` entry (rule 4) trusts such a tool;
   (Beyond the spec, stricter) typed agent provenance (``kind == "agent"``): the
   result is another agent's output (a sub-agent, an agent used as a tool); with no
   ``source_id`` its taint cannot be known, so it is untrusted (before rule 4); with
   one, every rule here still applies, and the firewall service then also taints
   the session when that identity has a live taint in any realm or no session state
   knows it (:meth:`meta_memory.firewall.service.FirewallService.tool_result`),
   even under ``trusted_tools``: the agent's taint only adds;
7. (beyond the spec, stricter) a name in ``default_untrusted_tools`` -- by default
   the shipped list of outside-content tools of the common frameworks and MCP
   servers (:mod:`meta_memory.firewall.outside_tools`), which the configuration
   can replace -- or a namespaced name with one of them as a segment
   (``puppeteer.navigate``; ``search`` only as the whole name, not ``kb.search``), or a name one of whose
   parts (split at separators, camel-case humps, an acronym's end, letters and digits) or runs of
   consecutive parts is one of the list's product-named servers, their short aliases or the words that
   name outside content (:data:`~meta_memory.firewall.outside_tools.OUTSIDE_CONTENT_SERVERS`,
   ``OUTSIDE_CONTENT_ALIASES``, ``OUTSIDE_CONTENT_WORDS``: ``read_slack_channel``, ``GetGithubIssue``,
   ``gh_issue_view``, ``get_webpage``, ``visit_page``; not ``slacker``, ``page_oncall``), or whose last
   part is ``fetch`` or ``fetcher`` (``OUTSIDE_CONTENT_ENDINGS``: ``url_fetch``, ``xweb_fetch``; not
   ``fetch_order``): untrusted (``outside-content tool '<n>'``). Each word was chosen by its
   false-positive risk (:mod:`~meta_memory.firewall.outside_tools`): a host's own tool caught by one has
   its session's later writes quarantined, kept for review, until ``trusted_tools`` lists it;
8. anything else: trusted -- or, under the opt-in stricter posture
   ``content_trust.default = "untrusted"``, untrusted (``unlisted tool '<n>'``):
   then only listed tools and servers are trusted. :attr:`Classification.unlisted`
   marks a verdict this rule gave, so the firewall can report the names it trusted
   only because no rule named them.

Names are compared by :func:`name_key`, never as raw strings, so spelling cannot
sidestep a rule: NFKC (fullwidth forms), format and zero-width characters
removed, Unicode dashes as ``-``, surrounding whitespace dropped, case folded,
and every separator (``_``, ``-``, ``.``, spaces; camel-case humps simply fold
together) removed. ``WebFetch``, ``WEB_FETCH``, ``web-fetch``, `` web fetch ``
and ``web\u200bfetch`` are all ``web_fetch``. The same key is applied to every
configured list entry and to MCP server names (``provenance.source_id`` and the
server of a qualified name), and the ``mcp__`` prefix is recognised in any case
(``MCP__kg__q``). The rules that make a tool untrusted (2, 3, 6, 7) also read
look-alike letters of other scripts as Latin (:func:`deny_key`); the rules that
trust never do. Tool results and tool *errors* classify the same way:
an error body is still text from the source.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from meta_memory.errors import ValueRuleBroken, echo
from meta_memory.firewall.outside_tools import (
    BARE_ONLY_NAMES,
    DEFAULT_UNTRUSTED_TOOLS,
    OUTSIDE_CONTENT_ALIASES,
    OUTSIDE_CONTENT_ENDINGS,
    OUTSIDE_CONTENT_SERVERS,
    OUTSIDE_CONTENT_WORDS,
)
from meta_memory.identity import parse_identity
from meta_memory.limits import MAX_SESSION_KEY_BYTES
from meta_memory.textfold import fold, unconfuse, unconfuse_separators

__all__ = [
    "ALWAYS_UNTRUSTED_TOOLS",
    "DEFAULT_UNTRUSTED_TOOLS",
    "CONTENT_TRUST_DEFAULTS",
    "MCP_PREFIX",
    "Classification",
    "ContentTrustPolicy",
    "PROVENANCE_KINDS",
    "ProvenanceError",
    "ToolProvenance",
    "classify_tool_result",
    "deny_key",
    "mcp_server_of",
    "name_key",
    "names_a_builtin",
]

#: Builtin web-facing tool names that are untrusted whatever the policy says.
ALWAYS_UNTRUSTED_TOOLS: frozenset[str] = frozenset({"web_search", "web_fetch", "fetch", "http_request"})

#: Prefix of a server-qualified MCP tool name, ``mcp__<server>__<tool>``.
MCP_PREFIX = "mcp__"

_POLICY_KEYS = ("trusted_mcp_servers", "untrusted_tools", "trusted_tools")
#: The policy's replaceable list of outside-content names (``None`` in config: the shipped list).
_DEFAULT_LIST_KEY = "default_untrusted_tools"

#: Accepted values of ``content_trust.default``: what an unlisted, non-MCP tool is.
CONTENT_TRUST_DEFAULTS = ("trusted", "untrusted")

#: How many names' keys :func:`name_key` and :func:`deny_key` keep (a tool name is at most 512 bytes: a few MB at
#: most); a host's tools are few, so each result's name is keyed once, not folded again per result.
NAME_KEYS_KEPT = 4096

_SEPARATORS = re.compile(r"[\W_]+")  # every character that is not a letter or digit


def _stable(step: Callable[[str], str], text: str) -> str:
    # Case folding and NFKC can each undo the other's normal form (``A`` + U+00B4): repeat until stable.
    for _ in range(8):
        nxt = step(text)
        if nxt == text:
            break
        text = nxt
    return text


def _light(name: str) -> str:
    """Folded (:func:`meta_memory.textfold.fold`), stripped and case-folded; separators kept."""
    return _stable(lambda t: fold(t).strip().casefold(), name)


@functools.lru_cache(maxsize=NAME_KEYS_KEPT)
def name_key(name: str) -> str:
    """The comparison key of a tool or server name (module docstring): ``"WebFetch"`` -> ``"webfetch"``.

    Idempotent: ``name_key(name_key(x)) == name_key(x)``.
    """
    return _stable(lambda t: _SEPARATORS.sub("", _light(t)), name)


@functools.lru_cache(maxsize=NAME_KEYS_KEPT)
def deny_key(name: str) -> str:
    """:func:`name_key` with letters of other scripts read as the Latin ones they look like
    (:func:`meta_memory.textfold.unconfuse`): ``wеb_fetch`` with a Cyrillic ``е`` -> ``"webfetch"``, and
    characters that look like a separator read as one (:func:`_deny_spelling`): ``web\u02cdfetch`` -> ``"webfetch"``.

    The key of every rule that makes a tool *untrusted* (the builtins, ``untrusted_tools``, the
    ``mcp__`` prefix), so a look-alike spelling still taints. Rules that *trust* a name compare
    :func:`name_key`, so a look-alike of a trusted name is not trusted.
    """
    return _stable(lambda t: name_key(unconfuse(_deny_spelling(t))), name)


def _deny_spelling(name: str) -> str:
    """``name`` folded (:func:`meta_memory.textfold.fold`), each letter, digit, mark or modifier that looks like a
    separator written as that separator (:func:`meta_memory.textfold.unconfuse_separators`: ``ꓸ`` as ``.``,
    ``ˍ`` as ``_``): the spelling every untrusting rule splits and keys, so a look-alike separator neither hides
    a segment (``functionsꓸfetch``) nor joins two words into one no rule names (``webˍfetch``)."""
    return unconfuse_separators(fold(name))


_BUILTIN_KEYS: frozenset[str] = frozenset(name_key(n) for n in ALWAYS_UNTRUSTED_TOOLS)
#: The list's names also matched as consecutive parts of a name (rule 7): the product-named servers and words.
_PART_KEYS: frozenset[str] = frozenset(deny_key(n) for n in (*OUTSIDE_CONTENT_SERVERS, *OUTSIDE_CONTENT_WORDS))
#: alias key -> its server's key (an alias is matched while the list holds its server)
_ALIAS_KEYS: dict[str, str] = {deny_key(a): deny_key(s) for a, s in OUTSIDE_CONTENT_ALIASES.items()}
_ENDING_KEYS: frozenset[str] = frozenset(deny_key(n) for n in OUTSIDE_CONTENT_ENDINGS)
_BARE_ONLY_KEYS: frozenset[str] = frozenset(deny_key(n) for n in BARE_ONLY_NAMES)
#: What splits a name into segments: namespace separators, and whitespace (no tool catalogue allows it in a
#: name, so ``web_fetch x`` or a name with a line break is read as words, one of which may be a web tool).
_NAMESPACE = re.compile(r"[./:\\\s]+")
#: The namespace separators alone (whitespace kept inside a segment).
_PATH = re.compile(r"[./:\\]+")
#: A version suffix of a segment (``web_fetch_v2``, ``fetch-2``, ``WebSearch20250305``, ``browse_v1_2``), or a
#: ``tool`` suffix (``WebFetchTool``, ``web_fetch_tool``, ``fetch-tools``), or both (``web_fetch_tool_v2``).
_VERSION = re.compile(r"(?:[_\-\s]*(?:v?\d+|tools?))+$", re.IGNORECASE)
#: The separators other hosts write between ``mcp``, the server and the tool (``mcp_kg_q``, ``mcp.kg.q``).
_LOOSE_SEPARATOR = re.compile(r"[_\-.:/\s]")


def _names_one_of(name: str, keys: frozenset[str], bare_only: frozenset[str] = frozenset()) -> bool:
    """A namespaced or versioned spelling (``functions.web_fetch``, ``web_fetch.v2``, ``web_fetch_v2``,
    ``tools/fetch``, ``puppeteer.navigate``, ``web_fetch x``): any of its segments, or a segment without
    its version suffix, is one of ``keys`` (:func:`deny_key` keys). A key of ``bare_only`` counts only when
    the name is that one segment (``search_v2``, not ``kb.search``)."""
    parts = [part for part in _NAMESPACE.split(_light(_deny_spelling(name))) if part]
    if len(parts) > 1 and bare_only:
        keys = keys - bare_only
    for part in parts:
        if deny_key(part) in keys:
            return True
        bare = _VERSION.sub("", part)
        if bare and bare != part and deny_key(bare) in keys:
            return True
    return False


def _ends_with_one_of(name: str, keys: frozenset[str]) -> bool:
    """Whether a segment of ``name`` (split as :func:`_names_one_of` splits, or at the namespace separators
    alone) ends with one of ``keys`` (:func:`name_key` keys: a builtin's name), a version or ``tool`` suffix
    allowed, cut from the rest of the segment at a marked end (:func:`_marked_end`), with a letter or digit
    in that rest: ``my_web_fetch``, ``toolWebSearch``, ``my_web_fetch_v2``; ``web_fetcher`` runs on and does
    not match. ``keys`` empty: ``False``."""
    if not keys:
        return False
    longest = max(len(key) for key in keys)
    folded = _stable(lambda t: _deny_spelling(t).strip(), name)
    # whitespace both splits (``my tool web_fetch``) and joins (``my web fetch``)
    for part in set(_NAMESPACE.split(folded)) | set(_PATH.split(folded)):
        if len(part) <= _MAX_SUFFIX_SCAN:
            part = _VERSION.sub("", part)
        letters = 0
        for cut in range(len(part) - 1, 0, -1):
            letters += part[cut].isalnum()  # the letters on the key's side of the cut
            if letters > longest:  # a key is never shorter than the letters it was made from
                break
            if _marked_end(part, cut) and name_key(part[:cut]) and name_key(part[cut:]) in keys:
                return True
    return False


def _split_parts(segment: str) -> list[str]:
    """The parts of ``segment`` (folded, case kept) as :func:`deny_key` keys: split at every character that is
    not a letter or digit, at a camel-case hump (``slackRead``), before an acronym's last capital when a
    lower-case letter follows it (``GHIssue``: ``gh``, ``issue``) and between letters and digits
    (``rss2json``). Parts whose key is empty are dropped."""
    out: list[str] = []
    for chunk in _SEPARATORS.split(segment):
        start = 0
        for i in range(1, len(chunk)):
            before, here = chunk[i - 1], chunk[i]
            after = chunk[i + 1] if i + 1 < len(chunk) else ""
            if ((here.isupper() and (before.islower() or (before.isupper() and after.islower())))
                    or here.isdigit() != before.isdigit()):
                out.append(chunk[start:i])
                start = i
        out.append(chunk[start:])
    return [key for key in map(deny_key, out) if key]


def _names_a_part(name: str, keys: frozenset[str], endings: frozenset[str]) -> bool:
    """Whether consecutive parts (:func:`_split_parts`) of a segment of ``name`` (split as
    :func:`_names_one_of` splits, or at the namespace separators alone) spell one of ``keys``, or the
    segment's last part, its version or ``tool`` suffix dropped, is one of ``endings`` (:func:`deny_key`
    keys both). ``read_slack_channel``, ``GetGithubIssue``, ``gh_issue_view``, ``url_fetch``: yes (the
    list's servers, aliases, words, endings); ``slacker``, ``fetch_order``: no. ``keys`` and ``endings``
    empty: ``False``."""
    if not keys and not endings:
        return False
    longest = max((len(key) for key in keys), default=0)
    folded = _stable(lambda t: _deny_spelling(t).strip(), name)
    # whitespace both splits (``url_fetch x``) and joins (``brave search_x``: a server spelled with a space)
    for segment in set(_NAMESPACE.split(folded)) | set(_PATH.split(folded)):
        parts = _split_parts(segment)
        # the ending is read without a version or ``tool`` suffix (``url_fetch_v2``); the runs with it (``pop3``)
        bare = _split_parts(_VERSION.sub("", segment)) if len(segment) <= _MAX_SUFFIX_SCAN else parts
        last = bare[-1] if bare else parts[-1] if parts else ""
        if last in endings:
            return True
        for first in range(len(parts)):
            run = ""
            for part in parts[first:]:
                run += part
                if len(run) > longest:
                    break
                if run in keys:
                    return True
    return False


def _marked_end(part: str, cut: int) -> bool:
    """Whether ``part`` may be cut before index ``cut`` (:func:`_ends_with_one_of`): the character before the
    cut is not a letter or digit (``my-web_fetch``), or the cut is a camel-case hump (``myWebFetch``)."""
    before, here = part[cut - 1], part[cut]
    return not before.isalnum() or (here.isupper() and before.islower())


def names_a_builtin(name: str) -> bool:
    """A namespaced or versioned spelling whose segment is an always-untrusted builtin name
    (``functions.web_fetch``, ``WebFetchTool``), or a segment ending in a builtin name of two words after a
    marked end (``my_web_fetch``, ``toolWebSearch``, ``proxy-http-request``: a host's wrapper of the builtin)."""
    return _names_one_of(name, _BUILTIN_KEYS) or _ends_with_one_of(name, _WORDY_BUILTIN_KEYS)


#: The builtin names of more than one word, matched as a segment's ending too (:func:`names_a_builtin`); ``fetch``
#: alone ends too many of a host's own names (``order_fetch``).
_WORDY_BUILTIN_KEYS: frozenset[str] = frozenset(name_key(n) for n in ALWAYS_UNTRUSTED_TOOLS if "_" in n)


#: the longest segment whose version suffix is stripped before its ending is read (the suffix pattern backtracks)
_MAX_SUFFIX_SCAN = 512


#: The accepted values of a tool provenance's ``kind`` (compared in any case, surrounding space dropped). Only
#: ``mcp`` and ``agent`` change classification; the others name owners the name rules judge alone. Any other
#: kind is refused (:class:`ProvenanceError`), never read as "no provenance": an owner the firewall does not
#: know cannot be judged by the rules of one it does (fail closed: a refused report taints its session).
PROVENANCE_KINDS: tuple[str, ...] = ("mcp", "agent", "builtin", "function", "memory")


class ProvenanceError(ValueRuleBroken):
    """A tool result's provenance is not the wire shape ``{kind, source_id?}`` (``field`` names the
    member; clients see ``-32602 Invalid params: <rule>``)."""


@dataclass(frozen=True, slots=True)
class ToolProvenance:
    """Typed owner of a tool, as the host's tool catalog knows it.

    Attributes:
        kind: the owner kind, one of :data:`PROVENANCE_KINDS` (``"mcp"``, ``"agent"``, ``"builtin"``,
            ``"function"``, ``"memory"``; :meth:`parse` refuses any other). Only ``"mcp"`` and ``"agent"``
            change classification.
        source_id: the owner's id; for ``kind == "mcp"`` it is the MCP server name, for
            ``kind == "agent"`` the identity of the agent whose output this is.
        session_key: for ``kind == "agent"`` only, optional: the session of that agent the output came
            from (``""``: any of its sessions).
    """

    kind: str
    source_id: str = ""
    session_key: str = ""

    @property
    def is_mcp(self) -> bool:
        """True when the tool belongs to an MCP server (``kind`` is ``mcp``, any case)."""
        return self.kind.strip().lower() == "mcp"

    @property
    def is_agent(self) -> bool:
        """True when the result is another agent's output (``kind`` is ``agent``, any case): ``source_id``
        names that agent's identity."""
        return self.kind.strip().lower() == "agent"

    @classmethod
    def parse(cls, value: object, field: str = "provenance") -> ToolProvenance | None:
        """Parse the wire shape ``{kind, source_id?, session_key?}`` (``None`` when absent).

        Raises :class:`ProvenanceError` naming ``field`` when the
        value is not an object, ``kind`` is not one of :data:`PROVENANCE_KINDS` (in any case), ``source_id`` is
        not a string, ``kind`` or ``source_id`` is over 512 bytes, unknown keys are present, an MCP provenance has no
        ``source_id`` (an MCP tool without a server cannot be attributed), or an agent
        provenance's ``source_id`` is not a valid identity (the name rule of
        :func:`meta_memory.identity.parse_identity`), or a ``session_key`` is given other than with an
        agent provenance naming its ``source_id``, or is not a non-empty string of at most
        :data:`~meta_memory.limits.MAX_SESSION_KEY_BYTES` bytes.
        """
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise ProvenanceError(f"{field} must be an object with kind and source_id", field)
        unknown = sorted(str(k) for k in value if k not in ("kind", "source_id", "session_key"))
        if unknown:
            raise ProvenanceError(f"unsupported {field} fields: {', '.join(unknown)}", field)
        kind = value.get("kind")
        if not isinstance(kind, str) or not kind.strip():
            raise ProvenanceError(f"{field}.kind must be a non-empty string", f"{field}.kind")
        if kind.strip().lower() not in PROVENANCE_KINDS:
            raise ProvenanceError(f"{field}.kind must be one of {', '.join(PROVENANCE_KINDS)} (any case)",
                                  f"{field}.kind")
        source_id = value.get("source_id", "")
        if source_id is None:
            source_id = ""
        if not isinstance(source_id, str):
            raise ProvenanceError(f"{field}.source_id must be a string", f"{field}.source_id")
        for name, text in (("kind", kind), ("source_id", source_id)):
            if len(text.encode("utf-8", "surrogatepass")) > MAX_SESSION_KEY_BYTES:
                raise ProvenanceError(f"{field}.{name} must be at most {MAX_SESSION_KEY_BYTES} bytes",
                                      f"{field}.{name}")
        session_key = value.get("session_key")
        if session_key is not None and (not isinstance(session_key, str) or not session_key.strip()
                                        or len(session_key.encode("utf-8", "surrogatepass")) > MAX_SESSION_KEY_BYTES):
            raise ProvenanceError(f"{field}.session_key must be a non-empty string of at most "
                                  f"{MAX_SESSION_KEY_BYTES} bytes", f"{field}.session_key")
        provenance = cls(kind=kind.strip(), source_id=source_id.strip(), session_key=(session_key or "").strip())
        if provenance.session_key and not (provenance.is_agent and provenance.source_id):
            raise ProvenanceError(f"{field}.session_key names the session of an agent: it needs kind 'agent' "
                                  "and its source_id", f"{field}.session_key")
        if provenance.is_mcp and not provenance.source_id:
            raise ProvenanceError(f"{field}.source_id must name the MCP server", f"{field}.source_id")
        if provenance.is_agent and provenance.source_id:
            try:
                parse_identity(source_id)
            except ValueError as exc:
                raise ProvenanceError(f"{field}.source_id must name the agent's identity: {exc}",
                                      f"{field}.source_id") from exc
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
    #: Trusted only because no rule names the tool (the spec's rule 7 under ``default = "trusted"``).
    unlisted: bool = field(default=False, compare=False)

    @classmethod
    def untrusted(cls, source: str) -> Classification:
        """An untrusted verdict naming its ``source``, each invisible or controlling character in it (a tool or
        server name's: a terminal escape, a bidirectional override, tag characters spelling hidden text) written
        as its escape (:func:`meta_memory.errors.echo`): the source is shown to the model in the ``memory``
        tool's answers, to the console and to the command line."""
        return cls(trusted=False, source=echo(source, len(source)))


TRUSTED = Classification(trusted=True)
#: The verdict of the default rule under ``default = "trusted"``: no rule names the tool.
TRUSTED_UNLISTED = Classification(trusted=True, unlisted=True)


def _names(value: object, key: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ValueError(f"content_trust.{key} must be an array")
    out: set[str] = set()
    for entry in value:
        if not isinstance(entry, str) or not name_key(entry):
            raise ValueError(f"content_trust.{key} entries must be non-empty strings")
        out.add(entry)  # keyed by the policy (name_key, or deny_key for untrusted_tools)
    return frozenset(out)


def _default(value: object) -> str:
    if value is None:
        return "trusted"
    if not isinstance(value, str) or value.strip().lower() not in CONTENT_TRUST_DEFAULTS:
        raise ValueError("content_trust.default must be 'trusted' or 'untrusted'")
    return value.strip().lower()


@dataclass(frozen=True, slots=True)
class ContentTrustPolicy:
    """The ``agent_memory.content_trust`` policy: three name sets (held as :func:`name_key` keys) and a default.

    Attributes:
        trusted_mcp_servers: MCP servers whose tools do not taint.
        untrusted_tools: tool names that always taint (after the builtins).
        trusted_tools: tool names that never taint, unless they are builtin web
            tools or also listed in ``untrusted_tools``.
        default: ``"trusted"`` (the seed's rule 7) or ``"untrusted"`` (opt-in: a
            tool that no rule names taints).

    Entries given directly to the constructor are keyed too, so a policy built in
    code compares like one decoded from config.
    """

    trusted_mcp_servers: frozenset[str] = frozenset()
    untrusted_tools: frozenset[str] = frozenset()
    trusted_tools: frozenset[str] = frozenset()
    default: str = "trusted"
    #: Outside-content tool names untrusted after the spec's rules (rule 7); ``None``: the shipped
    #: :data:`~meta_memory.firewall.outside_tools.DEFAULT_UNTRUSTED_TOOLS`, an empty set: none.
    default_untrusted_tools: frozenset[str] | None = None
    #: The names of ``default_untrusted_tools`` also matched as consecutive parts of a name (derived: the
    #: :data:`~meta_memory.firewall.outside_tools.OUTSIDE_CONTENT_SERVERS` and ``OUTSIDE_CONTENT_WORDS`` the
    #: list holds, and the ``OUTSIDE_CONTENT_ALIASES`` of the servers it holds), as keys.
    outside_parts: frozenset[str] = field(init=False, default=frozenset(), compare=False)
    #: The ``OUTSIDE_CONTENT_ENDINGS`` the list holds, matched as a segment's last part (derived), as keys.
    outside_endings: frozenset[str] = field(init=False, default=frozenset(), compare=False)

    def __post_init__(self) -> None:
        for key in _POLICY_KEYS:
            keyed = deny_key if key == "untrusted_tools" else name_key
            object.__setattr__(self, key, frozenset(keyed(n) for n in getattr(self, key)))
        object.__setattr__(self, "default", _default(self.default))
        names = DEFAULT_UNTRUSTED_TOOLS if self.default_untrusted_tools is None else self.default_untrusted_tools
        outside = frozenset(deny_key(n) for n in names)
        object.__setattr__(self, "default_untrusted_tools", outside)
        aliases = {alias for alias, server in _ALIAS_KEYS.items() if server in outside}
        object.__setattr__(self, "outside_parts", (outside & _PART_KEYS) | aliases)
        object.__setattr__(self, "outside_endings", outside & _ENDING_KEYS)

    def ineffective_trusted_tools(self) -> list[str]:
        """The ``trusted_tools`` entries (as keys) that can never trust their tool, each with why: an
        always-untrusted builtin web tool, or a name ``untrusted_tools`` also lists (untrusted wins).
        ``serve`` warns of them at start and ``meta/status`` reports them: nothing configured is ignored
        silently."""
        out: list[str] = []
        for key in sorted(self.trusted_tools):
            if deny_key(key) in _BUILTIN_KEYS or names_a_builtin(key):
                out.append(f"'{key}' (an always-untrusted builtin web tool)")
            elif deny_key(key) in self.untrusted_tools:
                out.append(f"'{key}' (also in untrusted_tools, which wins)")
        return out

    @property
    def names_any_tool(self) -> bool:
        """Whether the operator's configuration names any tool or server (``trusted_tools``,
        ``untrusted_tools``, ``trusted_mcp_servers``) or makes unlisted tools untrusted: else only
        the builtins and the shipped outside-content list decide, and every other tool is trusted."""
        return bool(self.trusted_tools or self.untrusted_tools or self.trusted_mcp_servers
                    or self.default == "untrusted")

    @classmethod
    def from_config(cls, config: object) -> ContentTrustPolicy:
        """Build a policy from any config shape.

        Accepts ``None`` (empty policy), a :class:`ContentTrustPolicy`, a mapping
        with the three list keys and ``default``, or any object with those
        attributes (the config model's ``content_trust``). Entries are keyed by
        :func:`name_key` (``untrusted_tools`` by :func:`deny_key`). Raises ``ValueError`` (``content_trust.<key> must be an
        array`` / ``content_trust.<key> entries must be non-empty strings`` /
        ``content_trust.default must be 'trusted' or 'untrusted'``) on bad shapes.
        """
        if config is None:
            return cls()
        if isinstance(config, ContentTrustPolicy):
            return config
        if isinstance(config, Mapping):
            unknown = sorted(str(k) for k in config if k not in (*_POLICY_KEYS, "default", _DEFAULT_LIST_KEY))
            if unknown:
                raise ValueError(f"unsupported content_trust fields: {', '.join(unknown)}")
            values = {key: config.get(key) for key in _POLICY_KEYS}
            default = config.get("default")
            outside = config.get(_DEFAULT_LIST_KEY)
        else:
            values = {key: getattr(config, key, None) for key in _POLICY_KEYS}
            default = getattr(config, "default", None)
            outside = getattr(config, _DEFAULT_LIST_KEY, None)
        return cls(**{key: _names(values[key], key) for key in _POLICY_KEYS}, default=_default(default),
                   default_untrusted_tools=None if outside is None else _names(outside, _DEFAULT_LIST_KEY))


def mcp_server_of(tool_name: str) -> str | None:
    """The server of a qualified ``mcp__<server>__<tool>`` name, else ``None``.

    ``mcp__kg__query`` -> ``kg``; ``mcp__kg`` -> ``kg`` (no second separator: the
    whole rest); ``search`` -> ``None``. The prefix is matched after folding
    (``MCP__kg__q``, fullwidth or zero-width-padded spellings); the server is
    returned folded and case-folded.
    """
    light = _light(tool_name)
    if not unconfuse(light[: len(MCP_PREFIX)]).startswith(MCP_PREFIX):  # a look-alike prefix is still MCP
        return None
    rest = light[len(MCP_PREFIX) :]
    return rest.split("__", 1)[0]


def _loose_mcp_verdict(tool_name: str) -> Classification | None:
    """Rule 6's other spellings (module docstring): ``None`` unless ``tool_name`` is ``mcp``, one separator
    and more (``mcp_github_get_issue``); then untrusted, named by the rest's first segment (never trusted:
    the server's end is not marked)."""
    light = _light(_deny_spelling(tool_name))
    # a look-alike ``mcp`` is still MCP; ``mcp__`` (rule 6 proper) never reaches here
    if len(light) < 5 or unconfuse(light[:3]) != "mcp" or _LOOSE_SEPARATOR.fullmatch(light[3]) is None:
        return None
    rest = light[4:]
    first = next((part for part in _LOOSE_SEPARATOR.split(rest) if part), rest)
    return Classification.untrusted(f"MCP server '{first}' (tool '{tool_name}')")


def _server_verdict(server: str, tool_name: str, policy: ContentTrustPolicy) -> Classification:
    if name_key(server) in policy.trusted_mcp_servers:
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
        tool_name: the tool's name as the model called it (compared by :func:`name_key`).
        provenance: the tool catalog's typed owner, or ``None`` when unknown.
        policy: the configured content-trust policy (any object with the three
            name collections is accepted, see :meth:`ContentTrustPolicy.from_config`).
        server_tool: True for provider-native server-tool content (a provider's
            own web search or grounding); such content is always untrusted and
            ``tool_name`` names the provider tool.

    Returns:
        :class:`Classification`; untrusted sources read ``provider server tool '<n>'``,
        ``web tool '<n>'``, ``configured untrusted tool '<n>'``,
        ``MCP server '<server>' (tool '<n>')``,
        ``outside-content tool '<n>' (content_trust.default_untrusted_tools)`` or, under ``default = "untrusted"``,
        ``unlisted tool '<n>' (content_trust.default = untrusted)``; ``<n>`` is the
        name as given.
    """
    if not isinstance(policy, ContentTrustPolicy):
        policy = ContentTrustPolicy.from_config(policy)
    if server_tool:
        return Classification.untrusted(f"provider server tool '{tool_name}'")
    key, denied = name_key(tool_name), deny_key(tool_name)
    if denied in _BUILTIN_KEYS or names_a_builtin(tool_name):
        return Classification.untrusted(f"web tool '{tool_name}'")
    if denied in policy.untrusted_tools:
        return Classification.untrusted(f"configured untrusted tool '{tool_name}'")
    if provenance is not None and provenance.is_agent and not provenance.source_id:
        return Classification.untrusted(f"output of an agent of unknown taint (tool '{tool_name}'; "
                                        "provenance.source_id names none)")
    if key in policy.trusted_tools:
        return TRUSTED
    if provenance is not None and provenance.is_mcp:
        return _server_verdict(provenance.source_id, tool_name, policy)
    server = mcp_server_of(tool_name)
    if server is not None:
        return _server_verdict(server, tool_name, policy)
    if (loose := _loose_mcp_verdict(tool_name)) is not None:
        return loose
    outside = policy.default_untrusted_tools or frozenset()
    if (denied in outside or _names_one_of(tool_name, outside, _BARE_ONLY_KEYS)
            or _names_a_part(tool_name, policy.outside_parts, policy.outside_endings)):
        return Classification.untrusted(f"outside-content tool '{tool_name}' (content_trust.default_untrusted_tools)")
    if policy.default == "untrusted":
        return Classification.untrusted(f"unlisted tool '{tool_name}' (content_trust.default = untrusted)")
    return TRUSTED_UNLISTED

