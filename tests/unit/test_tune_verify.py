"""``batchline tune``'s verification step, with the measuring and the servers
faked: it benches on the inputs the tuning ran on, and without inputs of the
user's (tuned on the ops' warm-up items) it says it cannot verify instead of
crashing in the bench."""

from __future__ import annotations

import json

import pytest
import yaml

import tuning.cli as cli
import tuning.verify as verify_module
from tests.support.image_fakes import encode_png, image_config, make_image
from tuning.server import ServerFailed
from tuning.tuned_config import Change


class NoServer:
    """Stands in for a served config: the bench must not get as far as sending."""

    def __init__(self, config: str):
        self.url = "http://127.0.0.1:9"

    def __enter__(self) -> NoServer:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


@pytest.fixture
def tune(tmp_path, monkeypatch):
    """Runs ``tune`` on a one-op image config whose measuring recommends max_batch_size 8."""
    config = tmp_path / "img.yml"
    config.write_text(image_config(max_batch_size=1, max_queue_delay=0))
    monkeypatch.setenv("COLUMNS", "200")  # one message a line
    monkeypatch.setattr(cli, "_measure_all", lambda *args, **kwargs: [])
    monkeypatch.setattr(cli, "_changes", lambda *args, **kwargs: [Change("stats", "max_batch_size", 8, "faked")])
    monkeypatch.setattr(verify_module, "Server", NoServer)

    def run(*extra: str) -> tuple[int, dict]:
        out, report = tmp_path / "img.tuned.yml", tmp_path / "report.json"
        argv = [str(config), "--p99-ms", "400", "--budget-s", "10", "--concurrency", "2"]
        status = cli.main(cli.build_parser().parse_args([*argv, "-o", str(out), "--json", str(report), *extra]))
        assert yaml.safe_load(out.read_text())["op"]["stats"]["local_service_conf"]["max_batch_size"] == 8
        return status, json.loads(report.read_text())

    return run


def test_without_inputs_the_tuned_config_is_written_but_not_verified_and_it_says_why(tune, capsys):
    status, report = tune()
    assert status == 1
    err = capsys.readouterr().err
    assert "not verified" in err and "--inputs" in err and "--no-verify" in err
    assert "Traceback" not in err
    assert report["verification"]["verified"] is False
    assert "warm-up items" in report["verification"]["skipped"]


def test_with_inputs_the_verification_benches_those_inputs(tune, tmp_path, monkeypatch):
    images = tmp_path / "images"
    images.mkdir()
    (images / "a.png").write_bytes(encode_png(make_image(48, 32)))
    benched: list[list[str]] = []

    def run_levels(args, err):
        benched.append(args.inputs)
        raise RuntimeError("stop here: the bench got its inputs")

    monkeypatch.setattr(verify_module, "run_levels", run_levels)
    with pytest.raises(RuntimeError, match="stop here"):
        tune("--inputs", str(images / "*.png"))
    assert benched == [[str(images / "*.png")]]


def test_with_no_verify_nothing_is_benched(tune):
    status, report = tune("--no-verify")
    assert status == 0 and "verification" not in report


def test_a_server_that_does_not_start_leaves_the_config_written_and_says_why(tune, tmp_path, monkeypatch, capsys):
    images = tmp_path / "images"
    images.mkdir()
    (images / "a.png").write_bytes(encode_png(make_image(48, 32)))

    class DeadServer(NoServer):
        def __init__(self, config: str):
            raise ServerFailed(f"the server on {config} exited with code 2 before it was ready:\nbad op")

    monkeypatch.setattr(verify_module, "Server", DeadServer)
    status, report = tune("--inputs", str(images / "*.png"))
    assert status == 1
    err = capsys.readouterr().err
    assert "not verified" in err and "exited with code 2" in err and "Traceback" not in err
    assert report["verification"]["verified"] is False and "bad op" in report["verification"]["error"]
