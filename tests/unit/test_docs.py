"""Documents that quote the program's own output must quote it as it is."""

from __future__ import annotations

import configparser
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _block_after(text: str, marker: str) -> str:
    start = text.index(marker) + len(marker)
    return text[start : text.index("```", start)]


def test_config_md_quotes_batchline_check_as_it_prints():
    marker = "$ batchline check configs/ocr.yml\n"
    quoted = _block_after((ROOT / "docs" / "CONFIG.md").read_text(encoding="utf-8"), marker)
    out = subprocess.run(
        [sys.executable, "-m", "serving.cli", "check", "configs/ocr.yml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    printed = re.sub(r"(?<=\s)/\S+/(\S+)", r"/.../\1", out.stdout)  # model paths differ per machine
    assert printed == quoted


def test_every_extra_named_in_an_install_hint_exists():
    """Regression: an error message told users to install 'batchline[ocr]', an extra that did not exist."""
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    extras = set(parser["options.extras_require"])
    named = set()
    for path in ROOT.glob("**/*"):
        if path.suffix not in {".py", ".md", ".cfg", ".yml", ".sh"} or ".git" in path.parts or path == Path(__file__):
            continue
        named |= set(re.findall(r"batchline\[([A-Za-z0-9_,-]+)\]", path.read_text(encoding="utf-8", errors="ignore")))
    unknown = {e for group in named for e in group.split(",")} - extras
    assert not unknown, f"install hints name extras that setup.cfg does not define: {sorted(unknown)}"


def test_readme_rollout_example_loads_as_written(tmp_path):
    """The README's complete example (three files of one repository) is a valid repository."""
    from serving.config import load_repository

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n# (ocr_v\d\.yml):[^\n]*\n(.*?)```", text, flags=re.S)
    assert [name for name, _ in blocks] == ["ocr_v1.yml", "ocr_v2.yml", "ocr_v3.yml"]
    for name, body in blocks:
        (tmp_path / name).write_text(body, encoding="utf-8")
    repo = load_repository([str(tmp_path)])
    route = repo.routes["ocr"]
    assert (route.default, route.weights, route.shadow.version, route.shadow.sample) == (1, {1: 90, 2: 10}, 3, 0.5)
    assert [user for _, user in repo.shares["det"].users] == ["det", "det", "det"]


def _ray_yaml_examples(path: Path, heading: str) -> list[str]:
    """The ```yaml blocks of one section (from `heading` to the next heading of its level)."""
    text = (ROOT / path).read_text(encoding="utf-8")
    level = heading.split(" ")[0]
    start = text.index(f"\n{heading}\n")
    end = text.find(f"\n{level} ", start + len(heading) + 2)
    return re.findall(r"```yaml\n(.*?)```", text[start : end if end != -1 else len(text)], flags=re.S)


def _merged(base: dict, fragment: dict) -> dict:
    out = dict(base)
    for key, value in fragment.items():
        out[key] = _merged(base[key], value) if isinstance(value, dict) and isinstance(base.get(key), dict) else value
    return out


def test_ray_examples_load_and_follow_their_own_advice():
    """The `ray:` examples of CONFIG.md and DEPLOY.md load with the project's loader (a fragment
    that names no pipeline is applied to configs/ocr.yml), and every autoscaled op in them
    targets max_batch_size x instance_num ongoing requests, below max_ongoing_requests."""
    import yaml

    from serving.config import parse_config
    from serving.config.repository_files import repository_from
    from serving.rayserve.deployments import deployment_options

    base = yaml.safe_load((ROOT / "configs" / "ocr.yml").read_text(encoding="utf-8"))
    examples = [
        *_ray_yaml_examples(Path("docs/CONFIG.md"), "## Ray Serve: `ray:` blocks"),
        *_ray_yaml_examples(Path("docs/DEPLOY.md"), "## Ray cluster"),
    ]
    assert len(examples) == 2, "a ray: example was added or removed: check it loads here"
    autoscaled = 0
    for block in examples:
        data = yaml.safe_load(block)
        if "name" not in data:
            data = _merged(base, data)
        config = parse_config(data, "<docs example>", str(ROOT / "configs" / "ocr.yml"))
        options = deployment_options(repository_from(["<docs example>"], [("<docs example>", config)]))
        for op in config.ops:
            if op.ray is None or op.ray.autoscaling_config is None:
                continue
            autoscaled += 1
            svc = op.local_service_conf
            limit = options[f"{config.name}-{op.name}"]["max_ongoing_requests"]
            assert op.ray.autoscaling_config.target_ongoing_requests == svc.max_batch_size * svc.instance_num < limit
    assert autoscaled == 2
