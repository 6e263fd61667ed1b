"""What the precision bench asks of OpenVINO beyond the server's engine
(``engine: openvino``, serving/runners/openvino_runtime.py, which runs its
``runtime`` ops): the CPU's optimization capabilities, to tell which profiles
this machine can run."""

from __future__ import annotations


def cpu_capabilities() -> set[str]:
    """OpenVINO's ``OPTIMIZATION_CAPABILITIES`` of this CPU (e.g. FP32, INT8, BF16); empty without OpenVINO."""
    try:
        import openvino as ov
    except ImportError:
        return set()
    return {str(c).upper() for c in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")}
