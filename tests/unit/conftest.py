"""The unit tier's rule, held for every test in it: no model is loaded and no
child process started (those tests belong in tests/integration, see
tests/conftest.py). A short tool run (``subprocess``: ruff, hadolint, a fresh
interpreter checking what an import pulls in) stays allowed."""

import multiprocessing.process

import pytest

import serving.runners.onnxruntime_runtime
import serving.runners.openvino_runtime
import serving.runners.paddle_inference
import serving.runners.torch_runtime


class UnitTierViolation(AssertionError):
    """A unit test did what only integration and e2e tests may."""


def _refuse(what: str):
    def refuse(*args, **kwargs):
        raise UnitTierViolation(f"a unit test {what}: move it to tests/integration (tests/conftest.py)")

    return refuse


@pytest.fixture(scope="package", autouse=True)
def no_model_and_no_child_process():
    """Package-wide, so module and session fixtures of unit tests are held to it too."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        _forbid(monkeypatch)
        yield


def _forbid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", _refuse("started a child process"))
    load_model = _refuse("loaded a model")
    monkeypatch.setattr(serving.runners.paddle_inference, "build_config", load_model)
    monkeypatch.setattr(serving.runners.openvino_runtime, "create_openvino_runners", load_model)
    monkeypatch.setattr(serving.runners.torch_runtime, "create_torch_runners", load_model)
    monkeypatch.setattr(serving.runners.onnxruntime_runtime, "create_ort_runners", load_model)
