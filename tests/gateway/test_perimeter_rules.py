"""Property tests of the perimeter's decisions (``PerimeterRules``, origin and host normalisation,
the ``/rpc`` media-type rule), free of sockets."""

from __future__ import annotations

import ipaddress

from hypothesis import assume, given
from hypothesis import strategies as st
from starlette.datastructures import Headers

from meta_memory.server.config import normalise_host, normalise_origin
from meta_memory.server.perimeter import PerimeterRules, rpc_media_type_refusal

label = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True)
domain = st.lists(label, min_size=1, max_size=4).map(".".join)
port = st.integers(0, 65535)
scheme = st.sampled_from(["http", "https"])


def _case(text: str, flips: list[bool]) -> str:
    return "".join(c.upper() if f else c for c, f in zip(text, flips + [False] * len(text)))


@given(domain, st.lists(domain, max_size=4), st.one_of(st.none(), port))
def test_a_name_is_served_only_when_loopback_or_listed(name: str, listed: list[str], p: int | None) -> None:
    rules = PerimeterRules(allowed_hosts=tuple(normalise_host(h) for h in listed), bind_host="127.0.0.1")
    header = name if p is None else f"{name}:{p}"
    served = rules.host_refusal(header) is None
    loopback = name == "localhost" or name.endswith(".localhost")
    try:
        loopback = loopback or ipaddress.ip_address(name).is_loopback
    except ValueError:
        pass
    assert served == (loopback or name in listed)


@given(st.integers(0, 2**24 - 1), st.one_of(st.none(), port))
def test_every_127_address_is_loopback(n: int, p: int | None) -> None:
    addr = str(ipaddress.IPv4Address((127 << 24) + n))
    assert PerimeterRules().host_refusal(addr if p is None else f"{addr}:{p}") is None


@given(st.ip_addresses(), st.one_of(st.none(), port))
def test_ip_hosts_follow_loopback_and_the_bind_address(ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
                                                       p: int | None) -> None:
    text = f"[{ip}]" if ip.version == 6 else str(ip)
    header = text if p is None else f"{text}:{p}"
    assert (PerimeterRules().host_refusal(header) is None) == ip.is_loopback
    bound = PerimeterRules(bind_host=str(ip))
    wildcard = ip.is_unspecified
    assert (bound.host_refusal(header) is None) == (ip.is_loopback or not wildcard)


@given(domain, st.sampled_from(["", "."]))
def test_wildcard_hosts_cover_subdomains_only(name: str, dot: str) -> None:
    rules = PerimeterRules(allowed_hosts=(normalise_host("*.corp.example"),))
    assert rules.host_refusal(f"{name}.corp.example{dot}") is None
    assert rules.host_refusal("corp.example") is not None
    assume(not name.endswith("corp.example") and name != "localhost" and not name.endswith(".localhost"))
    assert rules.host_refusal(f"{name}corp.example") is not None


@given(scheme, domain, st.one_of(st.none(), port), st.lists(st.booleans(), max_size=40))
def test_origin_normalisation_is_idempotent_and_case_blind(s: str, host: str, p: int | None, flips: list[bool]) -> None:
    origin = f"{s}://{host}" + ("" if p is None else f":{p}")
    norm = normalise_origin(origin)
    assert normalise_origin(norm) == norm
    assert normalise_origin(_case(origin, flips)) == norm
    rules = PerimeterRules(allowed_origins=(norm,))
    assert rules.origin_allowed(_case(origin, flips), "http", "127.0.0.1:1")


@given(scheme, domain, st.one_of(st.none(), port), domain)
def test_a_present_origin_must_be_own_or_listed(s: str, host: str, p: int | None, other: str) -> None:
    suffix = "" if p is None else f":{p}"
    own_host = f"{host}{suffix}"
    rules = PerimeterRules(allowed_hosts=(host,))
    headers = Headers({"host": own_host, "origin": f"{s}://{own_host}"})
    assert rules.origin_refusal(headers, s, "POST") is None
    assume(other != host)
    foreign = Headers({"host": own_host, "origin": f"{s}://{other}{suffix}"})
    assert rules.origin_refusal(foreign, s, "POST") is not None
    flipped = "https" if s == "http" else "http"
    assert rules.origin_refusal(Headers({"host": own_host, "origin": f"{flipped}://{own_host}"}), s, "POST") is not None


@given(st.sampled_from(["cross-site", "same-site", "CROSS-SITE"]),
       st.sampled_from(["GET", "POST", "HEAD", "OPTIONS", "PUT"]),
       st.sampled_from(["navigate", "no-cors", "cors", "same-origin", ""]),
       st.sampled_from([None, "document", "DOCUMENT", "iframe", "frame", "embed", "object", "empty", "image"]))
def test_cross_site_fetch_metadata_allows_only_top_level_navigations(site: str, method: str, mode: str,
                                                                     dest: str | None) -> None:
    """A cross-site request passes without an Origin only as a top-level navigation: ``navigate`` mode and a
    ``document`` destination (or none sent); a frame, embed or object also navigates, and is refused."""
    headers = {"host": "127.0.0.1", "sec-fetch-site": site, "sec-fetch-mode": mode}
    if dest is not None:
        headers["sec-fetch-dest"] = dest
    refused = PerimeterRules().origin_refusal(Headers(headers), "http", method)
    top_level = dest is None or dest.lower() == "document"
    assert (refused is None) == (method in ("GET", "HEAD") and mode == "navigate" and top_level)


@given(st.text(max_size=40))
def test_only_application_json_bodies_are_read(content_type: str) -> None:
    media = content_type.split(";", 1)[0].strip().lower()
    refused = rpc_media_type_refusal(content_type) is not None
    if media != "application/json":
        assert refused


@given(st.sampled_from(["application/json", "APPLICATION/Json", " application/json "]),
       st.sampled_from(["", "; charset=utf-8", ";charset=UTF-8", '; charset="utf-8"']))
def test_application_json_is_accepted_with_a_utf8_charset(media: str, params: str) -> None:
    assert rpc_media_type_refusal(media + params) is None
