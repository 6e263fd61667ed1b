"""An open server does not start on the network: ``batchline serve`` on a
non-loopback address with no token exits 2, before any model loads, unless
the user opts out (``--insecure``, ``security.insecure``, ``BATCHLINE_INSECURE``).
The default, 127.0.0.1 without a token, starts as before."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml

from serving import server
from serving.cli import build_parser
from serving.service.exposure import INSECURE_ENV, OpenBindRefused, check_bind, insecure_env, is_loopback
from tests.support.engine_fakes import op_conf

ENV_VARS = ("BATCHLINE_AUTH_TOKEN", "BATCHLINE_ADMIN_TOKEN", INSECURE_ENV)


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LOCALHOST.", "::ffff:127.0.0.1"]
)
def test_loopback_addresses(host):
    assert is_loopback(host)


@pytest.mark.parametrize(
    "host", ["0.0.0.0", "::", "[::]", "", "192.168.1.20", "10.0.0.1", "fe80::1", "example.com", "localhost.example.com"]
)
def test_wildcards_lan_addresses_and_names_are_not_loopback(host):
    assert not is_loopback(host)


def test_an_open_bind_is_refused_with_a_message_naming_every_way_out():
    with pytest.raises(OpenBindRefused) as info:
        check_bind("0.0.0.0", token=None, insecure=False)
    message = str(info.value)
    for words in (
        "auth_token",
        "BATCHLINE_AUTH_TOKEN",
        "--insecure",
        "security: {insecure: true}",
        "BATCHLINE_INSECURE=1",
    ):
        assert words in message, words


def test_a_token_loopback_or_the_opt_out_lets_it_start(caplog):
    check_bind("0.0.0.0", token="t", insecure=False)
    check_bind("127.0.0.1", token=None, insecure=False)
    with caplog.at_level(logging.WARNING, logger="serving.service.exposure"):
        check_bind("::", token=None, insecure=True)
    assert "insecure opt-out" in caplog.text


@pytest.mark.parametrize(("value", "yes"), [("1", True), ("true", True), ("YES", True), ("0", False), ("", False)])
def test_the_insecure_variable(value, yes):
    assert insecure_env({INSECURE_ENV: value}) is yes
    assert insecure_env({}) is False


# ---------------------------------------------------------------------------- batchline serve


class Loaded(Exception):
    """Raised where the server would start loading its pipelines."""


@pytest.fixture
def no_loading(monkeypatch):
    """No token or opt-out from the environment; building the repository raises :class:`Loaded`."""
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)

    def refuse(*args, **kwargs):
        raise Loaded

    monkeypatch.setattr(server, "PipelineRepository", refuse)


def config_file(tmp_path: Path, **top) -> str:
    path = tmp_path / "echo.yml"
    path.write_text(yaml.safe_dump({"name": "echo", "op": {"echo": op_conf("EchoTextOp")}, **top}))
    return str(path)


def serve(*argv: str) -> int:
    args = build_parser(["serve", *argv]).parse_args(["serve", *argv])
    return int(args.handler(args))


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "my-host.example"])
def test_serve_on_an_open_address_without_a_token_exits_2_before_loading(tmp_path, no_loading, caplog, host):
    """Regression: the server started on any address with no token (the container bound 0.0.0.0)."""
    with caplog.at_level(logging.ERROR):
        assert serve(config_file(tmp_path), "--host", host) == 2
    assert "BATCHLINE_AUTH_TOKEN" in caplog.text and "--insecure" in caplog.text


def test_the_configs_host_is_checked_too(tmp_path, no_loading):
    assert serve(config_file(tmp_path, host="0.0.0.0")) == 2


@pytest.mark.parametrize(
    ("top", "argv", "env"),
    [
        ({}, (), {}),  # the default, 127.0.0.1: no token needed
        ({"host": "0.0.0.0", "auth_token": "t0ken"}, (), {}),
        ({}, ("--host", "0.0.0.0", "--insecure"), {}),
        ({"security": {"insecure": True}}, ("--host", "0.0.0.0"), {}),
        ({}, ("--host", "0.0.0.0"), {INSECURE_ENV: "1"}),
        ({}, ("--host", "0.0.0.0"), {"BATCHLINE_AUTH_TOKEN": "t0ken"}),
    ],
)
def test_what_lets_the_server_start(tmp_path, no_loading, monkeypatch, top, argv, env):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(Loaded):
        serve(config_file(tmp_path, **top), *argv)


def test_the_server_class_refuses_too(tmp_path, no_loading):
    from serving.config.file_set import load_repository

    config = load_repository([config_file(tmp_path)])
    with pytest.raises(OpenBindRefused):
        server.Server(config, host="::")
    with pytest.raises(Loaded):
        server.Server(config, host="::", insecure=True)


def test_serve_on_ray_checks_the_address_before_a_cluster_starts(tmp_path, no_loading, monkeypatch):
    pytest.importorskip("ray")
    import serving.rayserve.run as ray_run

    def no_cluster(*args, **kwargs):
        raise Loaded

    monkeypatch.setattr(ray_run, "serve_on_ray", no_cluster)
    assert serve(config_file(tmp_path), "--ray", "--host", "0.0.0.0") == 2
    with pytest.raises(Loaded):
        serve(config_file(tmp_path), "--ray", "--host", "0.0.0.0", "--insecure")
    with pytest.raises(Loaded):
        serve(config_file(tmp_path), "--ray")  # 127.0.0.1


def test_serve_on_ray_says_grpc_is_not_served_there(tmp_path, no_loading, monkeypatch, caplog):
    pytest.importorskip("ray")
    import serving.rayserve.run as ray_run

    def no_cluster(*args, **kwargs):
        raise Loaded

    monkeypatch.setattr(ray_run, "serve_on_ray", no_cluster)
    with caplog.at_level(logging.WARNING), pytest.raises(Loaded):
        serve(config_file(tmp_path), "--ray", "--rpc-port", "9998")
    assert "gRPC" in caplog.text and "not served on Ray yet" in caplog.text
