"""Hostile traffic against the real server on configs/ocr.yml (issue 25): image
bombs and JSON amplification, measured as the container would see them (the
server's RSS with its children, sampled every 50 ms). Each attack must be
answered (a refusal or a 200), stay within its bound, and leave the server
answering a normal request. The attacks and bounds: tests/support/reliability/hostile.py;
the same run with a table: ``python -m bench.hostile``."""

import pytest

from tests.support.reliability.hostile import attacks, run_attack
from tests.support.reliability.known_good import check_alive, valid_image
from tests.support.server_process import ROOT, ServerProcess

pytestmark = pytest.mark.slow

IMAGE, _ = valid_image()
ATTACKS = {a.name: a for a in attacks(IMAGE)}


@pytest.fixture(scope="module")
def server():
    proc = ServerProcess(f"{ROOT}/configs/ocr.yml", ready_timeout=300)
    yield proc
    proc.stop()


@pytest.mark.parametrize("name", list(ATTACKS))
def test_attack_is_bounded(server, name):
    outcome = run_attack(server.url, "ocr", server.proc.pid, ATTACKS[name])
    assert outcome.problems() == []
    assert check_alive(server.url, "ocr", IMAGE, None) == []
