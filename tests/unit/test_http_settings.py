"""``http:``: the config of the HTTP server's client limits, and how often the
server looks for connections past them."""

from __future__ import annotations

import textwrap

import pytest

from serving.config import ConfigError, load_repository, parse_config
from serving.config.schema import HttpConf
from serving.http.early_refusals import cleanup_interval

FAKE = "tests.support.config_fakes:FakeOp"


def parsed(http):
    return parse_config({"http": http, "op": {"a": {"class": FAKE}}}, source="c.yml")


def test_defaults():
    http = parsed({}).http
    assert http == HttpConf(
        channel_timeout_s=120.0, request_timeout_s=60.0, header_timeout_s=10.0, connection_limit=None
    )
    assert cleanup_interval(http) == 2.5  # a quarter of the header deadline, the shortest


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
