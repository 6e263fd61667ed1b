"""``http:``: the config of the HTTP front's client limits, what it gives
waitress, and the rule that closes a connection whose request is overdue."""

from __future__ import annotations

import textwrap
from types import SimpleNamespace

import pytest

from serving.config import ConfigError, load_repository, parse_config
from serving.config.schema import HttpConf
from serving.http.client_limits import TimedChannel, cleanup_interval, overdue, waitress_options

FAKE = "tests.support.config_fakes:FakeOp"


def parsed(http):
    return parse_config({"http": http, "op": {"a": {"class": FAKE}}}, source="c.yml")


def test_defaults_and_what_waitress_gets():
    http = parsed({}).http
    assert http == HttpConf(
        channel_timeout_s=120.0, request_timeout_s=60.0, header_timeout_s=10.0, connection_limit=None
    )
    assert waitress_options(http, threads=16) == {
        "channel_timeout": 120.0,
        "cleanup_interval": 2.5,  # a quarter of the header deadline, the shortest
        "connection_limit": 144,
    }
    tight = parsed({"request_timeout_s": 1, "channel_timeout_s": 30, "connection_limit": 50}).http
    options = waitress_options(tight, threads=16)
    assert options == {"channel_timeout": 30.0, "cleanup_interval": 0.5, "connection_limit": 50}


def test_checks_run_often_enough_for_the_shorter_timeout():
    assert cleanup_interval(HttpConf(channel_timeout_s=8, request_timeout_s=20)) == 2.0
    assert cleanup_interval(HttpConf(channel_timeout_s=600, request_timeout_s=600, header_timeout_s=600)) == 150.0
    assert cleanup_interval(HttpConf(channel_timeout_s=600, request_timeout_s=600, header_timeout_s=4)) == 1.0
    assert cleanup_interval(HttpConf(channel_timeout_s=0.1, request_timeout_s=5)) == 0.5


@pytest.mark.parametrize(
    "http, key, message",
    [
        ({"request_timeout_s": 0}, "http.request_timeout_s", "must be > 0, got 0"),
        ({"channel_timeout_s": -1}, "http.channel_timeout_s", "must be > 0, got -1"),
        ({"connection_limit": 0}, "http.connection_limit", "must be >= 1, got 0"),
        ({"header_timeout_s": 0}, "http.header_timeout_s", "must be > 0, got 0"),
        ({"header_timeout": 5}, "http.header_timeout", "unknown key"),
    ],
)
def test_bad_values_name_the_key(http, key, message):
    with pytest.raises(ConfigError) as info:
        parsed(http)
    assert str(info.value).startswith(f"c.yml: {key}: {message}"), str(info.value)


def test_two_files_of_one_server_must_agree_on_http(tmp_path):
    def write(name, head):
        path = tmp_path / f"{name}.yml"
        path.write_text(textwrap.dedent(f"name: {name}\n{head}op:\n  a: {{class: {FAKE}}}\n"))
        return str(path)

    a = write("one", "http: {request_timeout_s: 5}\n")
    b = write("two", "http: {request_timeout_s: 9}\n")
    c = write("three", "")
    with pytest.raises(ConfigError) as info:
        load_repository([a, b])
    assert f"{b}: http: " in str(info.value) and "(one server has one HTTP front)" in str(info.value)
    assert load_repository([a, c]).http.request_timeout_s == 5


def channel(reading_since, in_service=(), headers_finished=True):
    ch = TimedChannel.__new__(TimedChannel)  # the rule reads four attributes; no socket needed
    ch.request = SimpleNamespace(headers_finished=headers_finished) if reading_since is not None else None
    ch.request_began = reading_since or 0.0
    ch.requests = list(in_service)
    return ch


def test_a_request_read_for_longer_than_the_timeout_is_overdue():
    assert overdue(channel(100.0), now=106.0, request_timeout_s=5)
    assert not overdue(channel(100.0), now=104.0, request_timeout_s=5)
    assert not overdue(channel(None), now=1e9, request_timeout_s=5)  # between requests: the idle rule's
    # the connection's previous request is still being answered: closing would cut that answer
    assert not overdue(channel(100.0, in_service=[object()]), now=106.0, request_timeout_s=5)
    assert not overdue(object(), now=1e9, request_timeout_s=5)  # not a TimedChannel


def test_headers_still_arriving_after_the_header_deadline_are_overdue():
    trickling = channel(100.0, headers_finished=False)
    assert overdue(trickling, now=111.0, request_timeout_s=60, header_timeout_s=10)
    assert not overdue(trickling, now=109.0, request_timeout_s=60, header_timeout_s=10)
    # headers complete, body still arriving: only the whole-request deadline applies
    assert not overdue(channel(100.0, headers_finished=True), now=111.0, request_timeout_s=60, header_timeout_s=10)


def test_a_refused_request_lingers_until_its_request_deadline_only():
    lingering = channel(None)
    lingering.lingering, lingering.request_began = True, 100.0
    assert not overdue(lingering, now=159.0, request_timeout_s=60, header_timeout_s=10)
    assert overdue(lingering, now=161.0, request_timeout_s=60, header_timeout_s=10)
