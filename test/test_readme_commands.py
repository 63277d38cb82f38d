"""The README's two commands on a fresh machine: CI runs both verbatim, and both make
and use a virtual environment (a stock Debian 12 / Ubuntu 24.04 Python refuses a system pip
install, PEP 668) from files that exist."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Two commands on a fresh machine", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section)


def test_the_readme_has_exactly_two_commands():
    commands = _readme_commands()
    assert len(commands) == 2, commands
    assert all("\n" not in command for command in commands), "each command is one line"
    main_job, tests = commands
    assert main_job.endswith("quirobot simulate --task incision")
    assert "pytest" in tests


def test_ci_runs_both_readme_commands_verbatim():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    for command in _readme_commands():
        assert command in ci, f".ci/run does not run the README's command as written: {command}"


def test_both_commands_install_into_a_fresh_virtual_environment():
    for command in _readme_commands():
        steps = [shlex.split(step) for step in command.split("&&")]
        assert steps[0] == ["python3", "-m", "venv", ".venv"], command
        assert steps[1] == [".", ".venv/bin/activate"], command
        install = steps[2]
        assert install[:2] == ["pip", "install"], command
        requirements = install[install.index("-r") + 1]
        assert (ROOT / requirements).is_file(), requirements
        assert install[-2:] == ["-e", "."], command


def test_the_virtual_environment_is_ignored():
    assert ".venv/" in (ROOT / ".gitignore").read_text().splitlines()
