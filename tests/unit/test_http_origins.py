"""The browser checks of ``security:`` (serving/http/origins.py) and the origin
and host syntax they share with config validation (serving/config/netloc.py)."""

from __future__ import annotations

import pytest

from serving.config.netloc import host_matches, host_of, normalize_host_pattern, normalize_origin
from serving.http.origins import AccessPolicy


@pytest.mark.parametrize(
    ("value", "canonical"),
    [
        ("http://localhost:9999", "http://localhost:9999"),
        ("HTTPS://App.Example.com", "https://app.example.com:443"),
        ("https://app.example.com:443", "https://app.example.com:443"),
        ("http://[::1]:8080", "http://[::1]:8080"),
        ("http://127.0.0.1", "http://127.0.0.1:80"),
        ("chrome-extension://abcdef", "chrome-extension://abcdef"),
    ],
)
def test_origins_are_made_canonical(value, canonical):
    assert normalize_origin(value) == canonical


@pytest.mark.parametrize(
    "value",
    ["null", "", "localhost:9999", "http://a.example/", "http://a.example/path", "http://u@a.example", "http://a:0"],
)
def test_what_is_no_origin(value):
    assert normalize_origin(value) is None


def test_host_headers_and_patterns():
    assert host_of("API.example.com:9999") == "api.example.com"
    assert host_of("[::1]:9999") == "::1"
    assert host_of("a b") is None
    assert normalize_host_pattern("*.Example.COM.") == "*.example.com"
    assert normalize_host_pattern("[::1]") == "::1"
    assert normalize_host_pattern("10.0.0.7") == "10.0.0.7"
    for bad in ("example.com:80", "http://example.com", "a.*.com", "*", ""):
        assert normalize_host_pattern(bad) is None, bad
    assert host_matches("api.example.com", "*.example.com")
    assert not host_matches("example.com", "*.example.com")  # the wildcard is below the name only
    assert not host_matches("evilexample.com", "*.example.com")


OWN = {"scheme": "http", "host_header": "127.0.0.1:9999"}


def refused(policy: AccessPolicy, *, origin: str | None = None, site: str | None = None, **own: str) -> bool:
    return policy.origin_refusal(**{**OWN, **own}, origin=origin, fetch_site=site) is not None


@pytest.mark.parametrize(
    ("origin", "site"),
    [
        ("https://evil.example", None),  # an older browser: Origin only
        ("https://evil.example", "cross-site"),
        (None, "cross-site"),  # a no-cors GET from another site carries no Origin
        ("http://127.0.0.1:3000", "same-site"),  # another port of this host: another origin
        ("http://127.0.0.1:3000", None),
        ("null", None),  # sandboxed frames, file:// pages
        ("null", "cross-site"),
        ("https://127.0.0.1:9999", None),  # another scheme
    ],
)
def test_another_origin_is_refused(origin, site):
    assert refused(AccessPolicy(), origin=origin, site=site)


@pytest.mark.parametrize(
    ("origin", "site"),
    [
        (None, None),  # curl, the client: not a browser page
        ("http://127.0.0.1:9999", None),
        ("http://127.0.0.1:9999", "same-origin"),
        (None, "same-origin"),  # the page's own GETs (no Origin on a same-origin GET)
        (None, "none"),  # typed in the address bar
        ("https://gw.example", "same-origin"),  # behind a TLS gateway: the browser's word decides
    ],
)
def test_the_servers_own_origin_and_non_browsers_pass(origin, site):
    assert not refused(AccessPolicy(), origin=origin, site=site)


def test_an_allowed_origin_passes_from_another_site():
    policy = AccessPolicy(allowed_origins=frozenset({"https://app.example.com:443"}))
    assert not refused(policy, origin="https://app.example.com", site="cross-site")
    assert refused(policy, origin="https://other.example.com", site="cross-site")
    assert refused(policy, origin=None, site="cross-site")


def test_the_default_port_is_the_same_origin():
    assert not refused(AccessPolicy(), origin="http://localhost", host_header="localhost:80")
    assert not refused(AccessPolicy(), origin="http://localhost:80", host_header="localhost")


def test_the_host_allow_list():
    policy = AccessPolicy(allowed_hosts=("api.example.com", "*.internal", "::1"))
    assert policy.host_refusal("api.example.com:9999") is None
    assert policy.host_refusal("API.EXAMPLE.COM") is None
    assert policy.host_refusal("svc.ns.internal") is None
    assert policy.host_refusal("[::1]:9999") is None
    for host in ("evil.example", "internal", "api.example.com.evil.example", None, "", "a b"):
        assert policy.host_refusal(host) is not None, host
    assert AccessPolicy().host_refusal("anything.example") is None  # empty list: any Host
