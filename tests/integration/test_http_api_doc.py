"""docs/reference/http-api.md lists every route the app registers, with its method
(a fake text pipeline: no model)."""

import re
from pathlib import Path

from serving.batching.pipeline import Pipeline
from serving.config import parse_config
from serving.http.app import create_app

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "reference" / "http-api.md"


def documented_form(rule: str) -> str:
    """A Flask rule as the reference writes it: ``/<name>/v<int:version>/predict`` -> ``/{name}/v{N}/predict``."""
    return re.sub(r"<int:version>", "{N}", re.sub(r"<(?:\w+:)?name>", "{name}", rule))


def test_documented_form():
    assert documented_form("/<name>/v<int:version>/prediction") == "/{name}/v{N}/prediction"


def test_every_route_is_in_the_reference():
    config = parse_config(
        {"name": "echo", "op": {"echo": {"class": "tests.support.engine_fakes:EchoTextOp"}}}, "<test>", None
    )
    pipeline = Pipeline(config)
    pipeline.start()
    try:
        app = create_app(pipeline)
    finally:
        pipeline.shutdown(timeout=5)
    table = DOC.read_text(encoding="utf-8").split("## Routes", 1)[1].split("\n## ", 1)[0]
    missing = []
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static" or (rule.endpoint.startswith("page:") and rule.rule != "/"):
            continue  # the page's own files are listed as a group
        methods = ["GET"] if rule.rule == "/" else sorted(rule.methods - {"HEAD", "OPTIONS"})
        for method in methods:
            if f"`{method} {documented_form(rule.rule)}`" not in table:
                missing.append(f"{method} {rule.rule}")
    assert not missing, f"routes missing from {DOC.relative_to(ROOT)}: {missing}"
