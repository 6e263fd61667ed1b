"""Documents that quote the program's own output, code or examples must quote them as they are
(the links, commands and configs of every page: test_doc_commands.py)."""

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


def test_rollout_example_loads_as_written(tmp_path):
    """The rollout how-to's complete example (three files of one repository) is a valid repository,
    and its shadow's heavy op runs in processes, where the idle CPU class reaches the inference."""
    from serving.config import load_repository

    text = (ROOT / "docs" / "howto" / "roll-out-a-version.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n# (ocr_v\d\.yml):[^\n]*\n(.*?)```", text, flags=re.S)
    assert [name for name, _ in blocks] == ["ocr_v1.yml", "ocr_v2.yml", "ocr_v3.yml"]
    for name, body in blocks:
        (tmp_path / name).write_text(body, encoding="utf-8")
    repo = load_repository([str(tmp_path)])
    route = repo.routes["ocr"]
    assert (route.default, route.weights, route.shadow.version, route.shadow.sample) == (1, {1: 90, 2: 10}, 3, 0.5)
    assert [user for _, user in repo.shares["det"].users] == ["det", "det", "det"]
    assert route.versions[3].op["rec"].local_service_conf.instance_mode == "process"


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
    from serving.config.file_set import repository_from
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


def _section(text: str, heading: str) -> str:
    """The text under ``heading`` up to the next heading of the same or a higher level."""
    level = heading.split(" ")[0]
    start = text.index(f"\n{heading}\n") + len(heading) + 2
    ends = [m.start() for m in re.finditer(rf"^#{{1,{len(level)}}} ", text[start:], flags=re.M)]
    return text[start : start + ends[0]] if ends else text[start:]


def test_add_an_op_example_serves_a_request(tmp_path, monkeypatch):
    """The how-to's op, imported from the page as written, loads from its config block and
    answers a request through the engine's own batch path (padding included)."""
    import yaml

    from serving.batching.direct import run_op_direct
    from serving.batching.execute import run_batch
    from serving.batching.launch import make_op
    from serving.config import parse_config

    text = (ROOT / "docs" / "howto" / "add-an-op.md").read_text(encoding="utf-8")
    (code,) = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    (config_block,) = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    (tmp_path / "docs_words_op.py").write_text(code, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    data = yaml.safe_load(config_block.replace("mypackage.words:", "docs_words_op:"))
    config = parse_config(data, "words.yml", str(tmp_path / "words.yml"))
    op = make_op(config.op["count"])
    op.load()
    (runner,) = op.create_runners(1)
    assert run_op_direct(op, runner, {"input": "one two three"}) == {"words": 3}
    outputs, _ = run_batch(op, runner, [op.preprocess("a b"), op.preprocess("c d e f")], run_sizes=[])
    assert [op.postprocess(None, out) for out in outputs] == [{"words": 2}, {"words": 4}]


def test_metrics_reference_lists_every_family_as_exported():
    """docs/reference/metrics.md names every family of the server's registry, with its type
    and labels, and nothing else: the GPU families too (a fake NVML with one GPU)."""
    from serving.batching.metrics import Metrics
    from serving.runners.gpus import open_gpus
    from tests.support.fake_nvml import FakeGpu, FakeNvml

    metrics = Metrics(gpus=open_gpus(FakeNvml([FakeGpu()])))
    in_code = {
        m._name: (m._type, ", ".join(m._labelnames) or "(none)")  # noqa: SLF001 - the families' own record
        for m in vars(metrics).values()
        if hasattr(m, "_labelnames")
    }
    # the families read at scrape time (custom collectors) declare theirs in describe()
    collectors = [m for m in vars(metrics).values() if hasattr(m, "describe") and not hasattr(m, "_labelnames")]
    for family in (f for c in collectors for f in c.describe()):
        in_code[family.name] = (family.type, ", ".join(family._labelnames))  # noqa: SLF001
    # and nothing the registry exports escapes this list (counters are exported as name_total)
    assert {f.name for f in metrics.registry.collect()} == set(in_code)
    text = (ROOT / "docs" / "reference" / "metrics.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(batchline_\w+)` \| (\w+) \| ([^|]+) \|", _section(text, "## Families"), flags=re.M)
    in_doc = {name: (kind, labels.strip()) for name, kind, labels in rows}
    assert in_doc == in_code


def test_cli_reference_names_exactly_each_commands_flags():
    """Each command's section of docs/reference/cli.md names the flags its parser takes, no more."""
    from serving.cli import build_parser

    text = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    for argv in (["serve"], ["check"], ["predict"], ["bench"], ["pipelines"], ["tune"], ["ray", "build"]):
        parser = build_parser(argv)
        for name in argv:
            action = next(a for a in parser._actions if a.dest in ("command", "ray_command") and a.choices)  # noqa: SLF001
            parser = action.choices[name]
        flags = {s for a in parser._actions for s in a.option_strings if s.startswith("--")} - {"--help"}  # noqa: SLF001
        section = _section(text, f"## `batchline {' '.join(argv)}`")
        named = set(re.findall(r"`(--[a-z0-9-]+)", section))
        assert named == flags, f"batchline {' '.join(argv)}: doc {sorted(named)} vs parser {sorted(flags)}"
