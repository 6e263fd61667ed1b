"""Which device each predictor instance of an op runs on (round-robin over
``devices`` on GPU): where the runners load it and what the metric reports."""

from __future__ import annotations

from serving.config.schema import LocalServiceConf


def gpu_of(conf: LocalServiceConf, index: int) -> int | None:
    """The GPU id of instance ``index``; None on CPU."""
    if conf.device_type == 0:
        return None
    devices = conf.device_ids or [0]
    return devices[index % len(devices)]


def lone_gpu(conf: LocalServiceConf, device_id: int | None) -> int | None:
    """The GPU of an instance loaded alone (a predictor process's): ``device_id``, else the first
    of ``devices``; None on CPU."""
    if conf.device_type == 0:
        return None
    return device_id if device_id is not None else gpu_of(conf, 0)


def device_name(gpu: int | None) -> str:
    """``"cpu"``, or ``"gpu:N"`` (Paddle's spelling; N is the id in ``devices``)."""
    return "cpu" if gpu is None else f"gpu:{gpu}"


def device_of(conf: LocalServiceConf, index: int) -> str:
    """The device instance ``index`` runs on, by name (:func:`device_name`)."""
    return device_name(gpu_of(conf, index))
