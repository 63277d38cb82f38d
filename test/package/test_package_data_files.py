"""One data-file locator (quirobot_description/data_files.py) in a source checkout and a pip install.

The colcon install is tested in CI's ROS tier (test/ros/test_package_install.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from installed_package import assert_installed_copy, run_loaders, system_site_packages

from quirobot_description.data_files import DataFileNotFoundError, data_file_candidates, find_data_file

ROOT = Path(__file__).resolve().parents[2]
MARKER = Path("share/ament_index/resource_index/packages/quirobot")
#: What setup.py needs to build the package (everything else in the repository stays out).
SOURCES = (
    "setup.py",
    "setup.cfg",
    "install_manifest.json",
    "package.xml",
    "resource",
    "quirobot_description",
    "quirobot_kinematics",
    "quirobot_control",
    "config",
    "launch",
    "rviz",
)


@pytest.mark.parametrize(
    ("name", "source"),
    [
        ("quirobot.yaml", "quirobot_description/quirobot.yaml"),
        ("urdf/quirobot.urdf.xacro", "quirobot_description/urdf/quirobot.urdf.xacro"),
        ("config/quirobot_drive.eds", "config/quirobot_drive.eds"),
        ("config/control.yaml", "config/control.yaml"),
        ("config/controllers.yaml", "config/controllers.yaml"),
        ("config/kinematics.yaml", "config/kinematics.yaml"),
        ("config/tasks/incision.yaml", "config/tasks/incision.yaml"),
        ("launch/bringup.launch.py", "launch/bringup.launch.py"),
    ],
)
def test_source_checkout_finds_each_file_in_the_repository(name, source):
    assert find_data_file(name) == ROOT / source


def test_ament_prefix_with_the_package_is_searched(tmp_path, monkeypatch):
    listed, unlisted = tmp_path / "listed", tmp_path / "unlisted"
    for prefix in (listed, unlisted):
        (prefix / "share/quirobot/config").mkdir(parents=True)
        (prefix / "share/quirobot/config/only_here.yaml").write_text("a: 1\n")
    (listed / MARKER).parent.mkdir(parents=True)
    (listed / MARKER).write_text("")
    monkeypatch.setenv("AMENT_PREFIX_PATH", os.pathsep.join([str(unlisted), str(listed)]))
    # the prefix whose ament index lists quirobot, not the first one on the path
    assert (
        find_data_file("config/only_here.yaml") == listed.resolve() / "share/quirobot/config/only_here.yaml"
    )


def test_missing_file_names_the_file_and_every_place_looked(tmp_path, monkeypatch):
    (tmp_path / MARKER).parent.mkdir(parents=True)
    (tmp_path / MARKER).write_text("")
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path))
    with pytest.raises(DataFileNotFoundError, match=r"cannot find config/nothing\.yaml \(looked in") as error:
        find_data_file("config/nothing.yaml")
    message = str(error.value)
    places = data_file_candidates("config/nothing.yaml")
    assert all(str(place) in message for place in places)
    expected = {
        ROOT / "quirobot_description/config/nothing.yaml",
        ROOT / "config/nothing.yaml",
        tmp_path.resolve() / "share/quirobot/config/nothing.yaml",
        Path(sys.prefix).resolve() / "share/quirobot/config/nothing.yaml",
    }
    assert expected <= set(places)
    assert isinstance(error.value, FileNotFoundError)  # drive_node's start-up catches OSError


@pytest.mark.parametrize("name", ["../setup.py", "/etc/hostname", ""])
def test_names_outside_share_are_refused(name):
    with pytest.raises(ValueError, match="relative path under share/quirobot"):
        find_data_file(name)


@pytest.fixture(scope="module")
def pip_installed(tmp_path_factory) -> Path:
    """A non-editable `pip install` of a copy of the sources into a fresh venv (about 10 s).

    The venv sees the system's third-party packages through a plain .pth path list, so the
    repository's own editable install (an import hook in a .pth) is not importable in it.
    """
    tmp = tmp_path_factory.mktemp("pip")
    sources = tmp / "sources"
    sources.mkdir()
    for entry in SOURCES:
        copy = shutil.copytree if (ROOT / entry).is_dir() else shutil.copy2
        ignore = {"ignore": shutil.ignore_patterns("__pycache__")} if (ROOT / entry).is_dir() else {}
        copy(ROOT / entry, sources / entry, **ignore)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    (site_packages,) = venv.glob("lib/python*/site-packages")
    (site_packages / "system.pth").write_text("\n".join(system_site_packages()) + "\n")
    # --ignore-installed: never uninstall the running environment's editable quirobot
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--ignore-installed"]
    result = subprocess.run(
        [*command, "--disable-pip-version-check", "--prefix", str(venv), str(sources)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    shutil.rmtree(sources)  # nothing left to import from but the install
    return venv


def _clean_environment() -> dict[str, str]:
    hidden = ("PYTHONPATH", "AMENT_PREFIX_PATH", "PYTHONHOME")
    return {k: v for k, v in os.environ.items() if k not in hidden} | {"PYTHONDONTWRITEBYTECODE": "1"}


@pytest.mark.slow
def test_pip_install_finds_every_file_in_the_venv(pip_installed, tmp_path):
    report = run_loaders([str(pip_installed / "bin" / "python")], tmp_path, _clean_environment())
    assert_installed_copy(report, pip_installed)


@pytest.mark.slow
def test_pip_prefix_install_finds_every_file_beside_the_packages(pip_installed, tmp_path):
    """`pip install --prefix P` used from another interpreter (P is not sys.prefix)."""
    (site_packages,) = pip_installed.glob("lib/python*/site-packages")
    environment = _clean_environment() | {
        "PYTHONPATH": os.pathsep.join([str(site_packages), *system_site_packages()])
    }
    # -S: no site (no .pth import hooks: the repository's editable install stays out)
    report = run_loaders([sys.executable, "-S"], tmp_path, environment)
    assert_installed_copy(report, pip_installed)


def test_one_config_home():
    """Everything the stack is configured with is in config/ (the parameter file, what the robot
    is, sits with its loader in quirobot_description/): no second config folder in the packages."""
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    folders = {
        "/".join(parts[: k + 1])
        for parts in (Path(path).parts for path in tracked)
        for k, part in enumerate(parts[:-1])
        if part == "config"
    }
    assert folders == {"config"}
    assert (ROOT / "quirobot_description" / "quirobot.yaml").is_file()
