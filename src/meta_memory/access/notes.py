"""What ``meta-memory serve`` warns of in an ``[access]`` section it accepts (printed at start, with its
other start warnings; the gateway still starts).

* a rule that can never apply: a grant with ``on`` of an action judged unscoped only
  (:data:`~meta_memory.access.config.UNSCOPED_ACTIONS`: ``ledger.read``, ``ledger.write``,
  ``operator.status``) or of a copy (:data:`~meta_memory.access.config.COPY_ACTIONS`: ``operator.backup``),
  and a deny with ``on`` of an unscoped-only action. Such a grant opens nothing and such a deny closes
  nothing: the file says something the gateway does not do. Not refused at load: a grant that never
  applies grants nothing (the gateway stays closed), and a file a gateway started with before must not
  stop it now; the warning names the rule so the operator can drop ``on`` or the rule.
* a name that may imitate another (:func:`meta_memory.mixed_script.name_mark`): an identity, mob or
  realm of a rule's ``on``, or an identity or realm of the roster, spelled with look-alike letters
  (``on = { identity = "lead:maіn" }`` with a Cyrillic ``і``) is another name than the one it looks
  like, so the rule protects or opens another identity than a reader of the file believes.
* names that differ only in case: an identity (or realm) that a rule's ``on`` or the roster spells
  ``Lead:Main`` in one place and ``lead:main`` in another names two identities (names are case-sensitive
  and never folded), so a rule written for one does not apply to the other.
* several principals under the default ``[agent_memory] shared_key_taint = "any"`` (agent memory on): any
  identity's taint of a session key then holds every identity's tool writes from that key for review,
  whichever principal drives them (docs/security.md, "Firewall: session taint").
"""

from __future__ import annotations

from ..mixed_script import name_mark
from .config import COPY_ACTIONS, UNSCOPED_ACTIONS, AccessConfig, AccessRule

__all__ = ["access_warnings"]


def _rule(kind: str, at: int, rule: AccessRule) -> str:
    """``access.grants[0] (operator.status on realm "*")``: how a warning names a rule."""
    on = rule.on
    where = "" if on is None else " on " + ", ".join(
        f'{key} "{getattr(on, key)}"' for key in ("identity", "mob", "role", "label", "realm")
        if getattr(on, key) is not None)
    return f"access.{kind}[{at}] ({rule.action}{where})"


def access_warnings(config: AccessConfig | None, shared_key_taint: str | None = None) -> list[str]:
    """The warnings of ``config`` (``None``: no ``[access]`` section, none), one sentence each: first
    whether several principals share session keys' taint (``shared_key_taint``: ``[agent_memory]
    shared_key_taint``, ``None`` when agent memory is off), then in file order grants, denies and the roster. ``[]``
    when there is nothing to warn of."""
    if config is None:
        return []
    out: list[str] = []
    if config.enabled and shared_key_taint == "any" and len({t.principal for t in config.tokens}) > 1:
        out.append('[agent_memory] shared_key_taint = "any" with several principals: any identity\'s taint of a '
                   "session key holds every identity's memory-tool writes from that key for review, whichever "
                   "principal drives them, and its `tainted` answers say so. Principals that are separate tenants "
                   'should each use a realm of their own, or set shared_key_taint = "managed" (see docs/access.md, '
                   '"Realms").')
    for kind, rules in (("grants", config.grants), ("denies", config.denies)):
        for at, rule in enumerate(rules):
            named = _rule(kind, at, rule)
            if rule.on is not None and (rule.action in UNSCOPED_ACTIONS
                                        or (kind == "grants" and rule.action in COPY_ACTIONS)):
                out.append(f"{named} can never apply: {rule.action} is judged unscoped only, so a "
                           f"{'grant' if kind == 'grants' else 'deny'} with 'on' {'opens' if kind == 'grants' else 'closes'} nothing "
                           "(drop 'on' to make it unscoped, or drop the rule; see docs/access.md)")
            if rule.on is not None:
                for key in ("identity", "mob", "realm"):
                    value = getattr(rule.on, key)
                    why = None if value is None else name_mark(value)
                    if why is not None:
                        out.append(f"{named} names {key} {value!r}, which {why}: it may imitate another name, "
                                   "and the rule applies to this one only (see docs/security.md, \"Names\")")
    for at, entry in enumerate(config.roster):
        for key, value in (("identity", entry.identity), ("realm", entry.realm)):
            why = None if value is None else name_mark(value)
            if why is not None:
                out.append(f"access.roster[{at}] names {key} {value!r}, which {why}: it may imitate another "
                           "name (see docs/security.md, \"Names\")")
    out += _case_variants(config)
    return out


_PLURAL = {"identity": "identities", "realm": "realms"}


def _case_variants(config: AccessConfig) -> list[str]:
    """One warning per identity or realm that the rules' ``on`` and the roster spell in several cases
    (``Lead:Main`` and ``lead:main``): the first place each spelling is named, in file order."""
    named: dict[str, dict[str, dict[str, str]]] = {"identity": {}, "realm": {}}
    for kind, rules in (("grants", config.grants), ("denies", config.denies)):
        for at, rule in enumerate(rules):
            for key in named:
                value = None if rule.on is None else getattr(rule.on, key)
                if value is not None and value != "*":
                    named[key].setdefault(value.casefold(), {}).setdefault(value, f"access.{kind}[{at}]")
    for at, entry in enumerate(config.roster):
        for key, value in (("identity", entry.identity), ("realm", entry.realm)):
            if value is not None:
                named[key].setdefault(value.casefold(), {}).setdefault(value, f"access.roster[{at}]")
    out: list[str] = []
    for key, groups in named.items():
        for spellings in groups.values():
            if len(spellings) > 1:
                where = ", ".join(f"{value!r} ({place})" for value, place in spellings.items())
                out.append(f"access names {key} {where}, which differ only in case: {key} names are "
                           f"case-sensitive, so these are {len(spellings)} {_PLURAL[key]} and a rule applies only to "
                           "the spelling it gives (see docs/security.md, \"Names\")")
    return out
