"""Run the fuzz against a server: send the generated cases, check each
answer, then check the server is still healthy."""

from __future__ import annotations

import time
from collections.abc import Callable

import requests

from serving.runners.process_memory import peak_rss_bytes, reset_peak, tree_rss_bytes
from tests.support.fuzz.case import Case, Limits
from tests.support.fuzz.cases import generate
from tests.support.fuzz.checks import check
from tests.support.fuzz.report import Report
from tests.support.image_fakes import ImageStatsOp
from tests.support.reliability.known_good import check_alive, valid_image

# how GET /{name}/config names the fake op's class (only its answer is known in advance)
FAKE_OP_CLASS = f"{ImageStatsOp.__module__}:{ImageStatsOp.__name__}"


def send(session: requests.Session, url: str, case: Case, timeout: float = 60.0) -> tuple[int, str, float]:
    """(status, body text, latency s); status 0 when there was no HTTP answer."""
    began = time.monotonic()
    try:
        r = session.request(case.method, url + case.path, data=case.body, headers=case.headers, timeout=timeout)
        return r.status_code, r.text, time.monotonic() - began
    except requests.RequestException as exc:
        return 0, f"no HTTP answer: {type(exc).__name__}: {exc}", time.monotonic() - began


def run_fuzz(
    url: str,
    name: str,
    limits: Limits,
    count: int,
    *,
    seed: int = 0,
    heavy: bool = True,
    pid: int | None = None,
    deadline_s: float = 900.0,
    progress: Callable[[str], None] | None = None,
    valid_image_path: str | None = None,
) -> Report:
    """Send ``count`` generated cases (bounded by ``deadline_s``), then check the server is healthy.
    ``pid``: the server's, for RSS peaks per category."""
    report = Report(rss_before=tree_rss_bytes(pid) if pid else 0)
    began = time.monotonic()
    with requests.Session() as session:
        for i, case in enumerate(generate(name, limits, count, seed=seed, heavy=heavy)):
            if time.monotonic() - began > deadline_s:
                report.alive_problems.append(f"stopped after {i} cases: {deadline_s}s budget spent")
                break
            if pid:
                reset_peak(pid)  # this case's peak, not the run's
            status, text, latency = send(session, url, case)
            report.record(case.category, status, latency)
            if pid:
                report.rss_peak[case.category] = max(report.rss_peak.get(case.category, 0), peak_rss_bytes(pid) or 0)
            problem = check(case, status, text)
            if problem:
                report.failures.append((case.category, status, problem, text[:300]))
                if status == 0:  # the connection died: start a fresh one
                    session.close()
                    session = requests.Session()
            if progress and (i + 1) % 100 == 0:
                progress(f"{i + 1}/{count} sent, {len(report.failures)} problems")
    image, expected = valid_image(valid_image_path)
    report.alive_problems += check_alive(url, name, image, expected if _is_fake(url, name) else None)
    report.rss_after = tree_rss_bytes(pid) if pid else 0
    report.elapsed_s = time.monotonic() - began
    return report


def _is_fake(url: str, name: str) -> bool:
    # only the fake op's answer to the valid image is known in advance
    try:
        ops = requests.get(f"{url}/{name}/config", timeout=10).json().get("ops", [])
        return all(op.get("class") == FAKE_OP_CLASS for op in ops)
    except (requests.RequestException, ValueError):
        return False


def limits_for(config_path: str | None) -> Limits:
    """The server's limits, read from its config file when we have it."""
    if not config_path:
        return Limits(max_body_size=64 << 20, max_inputs=64, max_image_pixels=40_000_000)
    from serving.config import load_config

    cfg = load_config(config_path)
    body = max(cfg.op[s].local_service_conf.max_body_size for s in cfg.dag_graph.sources)
    return Limits(
        max_body_size=body,
        max_inputs=cfg.max_inputs_per_request,
        max_image_pixels=cfg.max_image_pixels,
        priority_levels=cfg.dag.priority_levels,
    )
