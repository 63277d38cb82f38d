"""Test helper: run the package's data-file loaders in an installed copy, outside the repository.

`run_loaders` starts a Python process in a directory outside the repository that loads what
drive_node and the CLI load (the parameter file, config/control.yaml, both tasks, the xacro
expansion with its controllers file, the EDS) and reports, as JSON, the modules it imported and
the path of every data file. `assert_installed_copy` checks that both come from the install and
that each file has the bytes of the source tree's.
"""

from __future__ import annotations

import json
import site
import subprocess
from pathlib import Path

from quirobot_description.data_files import find_data_file

LOADERS = r"""
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import quirobot_control
import quirobot_description
import quirobot_kinematics
from quirobot_control.drives.cia402 import DEFAULT_EDS
from quirobot_control.hardware.control_config import CONTROL_CONFIG_FILE
from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.planning.tasks import load_task
from quirobot_description.data_files import find_data_file
from quirobot_description.parameters import load_parameters
from quirobot_description.urdf import XACRO_FILE, robot_description

params = load_parameters()
control = control_configuration(params)  # drive_node's start-up
incision, line = load_task("incision"), load_task("line")
urdf = ET.fromstring(robot_description("drill", "gazebo"))
controllers = urdf.find("gazebo/plugin/parameters").text  # gz_ros2_control's file
absolute = ET.fromstring(robot_description("drill", "gazebo", package_uris=False))
meshes = sorted({m.get("filename") for m in absolute.iter("mesh")})  # the visual meshes' files
print(json.dumps({
    "modules": [m.__file__ for m in (quirobot_control, quirobot_description, quirobot_kinematics)],
    "files": {
        "quirobot.yaml": str(params.path),
        "config/control.yaml": str(find_data_file(CONTROL_CONFIG_FILE)),  # as control_configuration
        "config/tasks/incision.yaml": str(incision.path),
        "config/tasks/line.yaml": str(line.path),
        "urdf/quirobot.urdf.xacro": str(XACRO_FILE),
        f"config/{Path(controllers).name}": controllers,
        "config/quirobot_drive.eds": str(DEFAULT_EDS),
        **{f"meshes/{Path(mesh).name}": mesh for mesh in meshes},
    },
    "joints": sorted(j.get("name") for j in urdf.findall("joint")),
}))
"""


def system_site_packages() -> list[str]:
    """The running interpreter's site-packages: third-party modules, without processing .pth files
    (so the repository's editable install, a .pth import hook, stays out)."""
    return site.getsitepackages()


def run_loaders(python: list[str], cwd: Path, env: dict[str, str]) -> dict:
    """LOADERS run by `python` (argv prefix) in `cwd` with `env`; its JSON report."""
    result = subprocess.run(
        [*python, "-c", LOADERS], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def assert_installed_copy(report: dict, install: Path) -> None:
    """Modules and data files all under `install`, each file with the source tree's bytes."""
    install = install.resolve()
    for module in report["modules"]:
        assert Path(module).resolve().is_relative_to(install), f"{module} is not the installed copy"
    # 7 data files and the 7 meshes the drill description draws (3 beams, bridge, links 4 and 5, drill)
    assert len(report["files"]) == 14
    for name, path in report["files"].items():
        assert Path(path).resolve().is_relative_to(install), f"{name}: {path} is outside {install}"
        assert Path(path).read_bytes() == find_data_file(name).read_bytes(), name
    assert "drill_feed" in report["joints"]
