"""The README's two commands on a fresh machine: CI runs both verbatim, and both make
and use a virtual environment (a stock Debian 12 / Ubuntu 24.04 Python refuses a system pip
install, PEP 668) from files that exist."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


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


# Issue 19 item 14: Debian 12's own pip (23.0.1) installs `-e .` of a project without
# pyproject.toml by a legacy `setup.py develop`, which reads setup.cfg's [develop] section. A
# `script_dir` there (ament_python's template: `$base/lib/quirobot`) sent the `quirobot` script
# to .venv/lib/quirobot, so the README's first command ended in "quirobot: command not found".
# colcon never reads setup.cfg here (package.xml: ament_cmake; CMakeLists.txt writes lib/quirobot).
SOURCES = (
    *("setup.py", "setup.cfg", "package.xml", "resource", "install_manifest.json"),
    *("quirobot_description", "quirobot_kinematics", "quirobot_control", "quirobot_cli"),
    *("config", "launch", "rviz"),  # install_manifest.json's share/quirobot patterns match files
)
SCRIPTS = ("quirobot", "kinematics_node", "drive_node", "task_node")


def test_setup_cfg_sends_no_script_outside_the_environments_bin():
    from setuptools.dist import Distribution

    distribution = Distribution()
    distribution.parse_config_files([str(ROOT / "setup.cfg")])
    for command, option in (("develop", "script_dir"), ("install", "install_scripts")):
        assert option not in distribution.get_option_dict(command), (
            f"setup.cfg [{command}] {option} moves the console scripts out of the venv's bin/"
        )


def _sources_copy(tmp_path: Path) -> Path:
    """What `setup.py develop` needs: the install manifest and what its patterns name."""
    sources = tmp_path / "sources"
    sources.mkdir()
    for entry in SOURCES:
        if (ROOT / entry).is_dir():
            shutil.copytree(ROOT / entry, sources / entry, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / entry, sources / entry)
    return sources


def _assert_scripts_in_bin(venv: Path) -> None:
    for script in SCRIPTS:
        assert (venv / "bin" / script).is_file(), f"{script} is not in {venv}/bin"
    assert not (venv / "lib" / "quirobot").exists(), "scripts went to lib/quirobot"


@pytest.mark.slow
def test_legacy_setup_py_develop_puts_the_scripts_in_the_venv_bin(tmp_path):
    """What pip 23.0 runs for `pip install -e .` here, with this interpreter's setuptools."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    (site_packages,) = venv.glob("lib/python*/site-packages")
    (site_packages / "system.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    result = subprocess.run(
        [str(venv / "bin" / "python"), "setup.py", "--quiet", "develop", "--no-deps"],
        cwd=_sources_copy(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    _assert_scripts_in_bin(venv)


SYSTEM_PYTHON = Path("/usr/bin/python3")


@pytest.mark.slow
@pytest.mark.skipif(not SYSTEM_PYTHON.is_file(), reason="no /usr/bin/python3 (Debian/Ubuntu's own Python)")
def test_system_python_pip_editable_install_puts_quirobot_in_the_venv_bin(tmp_path):
    """The README's first command's install step with the distribution's own python3 and pip
    (Debian 12: 3.11, pip 23.0.1), offline: `-e .` without dependencies."""
    venv = tmp_path / ".venv"
    made = subprocess.run(
        [str(SYSTEM_PYTHON), "-m", "venv", str(venv)], capture_output=True, text=True, timeout=120
    )
    if made.returncode != 0:
        pytest.skip(f"/usr/bin/python3 cannot make a venv (python3-venv missing): {made.stderr[-300:]}")
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--no-deps", "--no-index", "-e", "."],
        cwd=_sources_copy(tmp_path),
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    _assert_scripts_in_bin(venv)
    shebang = (venv / "bin" / "quirobot").read_text().splitlines()[0]
    assert shebang == f"#!{venv / 'bin' / 'python'}" or shebang.startswith(f"#!{venv}/bin/python"), shebang


def test_ci_runs_the_main_job_again_with_the_system_python():
    """.ci/run's second run of the README's first command puts /usr/bin/python3 first on PATH."""
    ci = (ROOT / ".ci" / "run").read_text()
    main_job = _readme_commands()[0]
    assert ci.count(main_job) >= 2
    system_step = ci[ci.index("ln -s /usr/bin/python3") :]
    assert main_job in system_step and "PATH=$PWD/.system-python:$PATH" in system_step
