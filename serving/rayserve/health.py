"""Which op deployments have a running replica, as Ray Serve's controller
sees it; polled in the background so ``/health/ready`` answers at once."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


def running_replicas(status: Any, app: str) -> dict[str, int]:
    """Deployment -> RUNNING replicas, from a ``serve.status()`` answer."""
    application = status.applications.get(app)
    if application is None:
        return {}
    counts = {}
    for name, deployment in application.deployments.items():
        states = {str(getattr(k, "value", k)): v for k, v in (deployment.replica_states or {}).items()}
        counts[name] = int(states.get("RUNNING", 0))
    return counts


class DeploymentHealth:
    """``running(name)``: whether the deployment had a running replica at the last poll (none
    before the first: the ops may still be loading when Serve routes to the ingress).
    :meth:`start` waits briefly for the first answer, so a ready application is ready at once."""

    def __init__(self, app: str, status: Callable[[], Any], interval_s: float = 1.0):
        self.app = app
        self._status = status
        self.interval_s = interval_s
        self._counts: dict[str, int] | None = None
        self._stop = threading.Event()
        self._polled = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="deployment-health", daemon=True)

    def start(self, first_poll_s: float = 2.0) -> DeploymentHealth:
        self._thread.start()
        self._polled.wait(first_poll_s)
        return self

    def poll(self) -> None:
        try:
            self._counts = running_replicas(self._status(), self.app)
        except Exception as exc:  # noqa: BLE001 - keep the last answer; the controller may be restarting
            log.debug("serve.status() failed: %s", exc)
        finally:
            self._polled.set()

    def _loop(self) -> None:
        while True:
            self.poll()
            if self._stop.wait(self.interval_s):
                return

    def running(self, deployment: str) -> bool:
        counts = self._counts
        return counts is not None and counts.get(deployment, 0) > 0

    def stop(self) -> None:
        self._stop.set()
