"""`.ci/run` runs exactly the README's test command and installs nothing else
(it used to install the Chinese font first, so CI passed where a new user's
`python -m pytest` did not)."""

import os
import re
import shlex

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# shell lines that only set the script up: strict mode, go to the checkout root
SETUP_LINES = ("set -euo pipefail", 'cd "$(dirname "$0")/.."')


def readme_test_command(text: str) -> str:
    """The one command in the README's fenced block that runs pytest."""
    blocks = re.findall(r"```(?:bash|sh)?\n(.*?)```", text, re.S)
    commands = [line.strip() for block in blocks for line in block.splitlines() if "pytest" in line]
    assert len(commands) == 1, commands
    return commands[0]


def ci_commands(text: str) -> list[str]:
    """The script's command lines: no comments, blank lines, shebang or setup lines."""
    lines = [line.strip() for line in text.splitlines()]
    return [line for line in lines if line and not line.startswith("#") and line not in SETUP_LINES]


def test_ci_runs_exactly_the_readme_test_command():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = readme_test_command(f.read())
    with open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8") as f:
        ci = ci_commands(f.read())
    assert shlex.split(readme) == ["pip", "install", "-e", ".[test]", "&&", "python", "-m", "pytest", "-q"]
    assert ci == [readme]


def test_the_parsers_see_an_extra_install_step():
    script = '#!/usr/bin/env bash\nset -euo pipefail\ncd "$(dirname "$0")/.."\napt-get install -y fonts-wqy-zenhei\nX\n'
    assert ci_commands(script) == ["apt-get install -y fonts-wqy-zenhei", "X"]
    readme = "Run:\n\n```bash\npip install -e . && batchline serve\n```\n\n```bash\npython -m pytest -q\n```\n"
    assert readme_test_command(readme) == "python -m pytest -q"
