"""Where the package's data files are: one locator for a source checkout, pip and colcon installs.

A data file is named by its path under share/quirobot after install (setup.py's data_files),
e.g. "quirobot.yaml" (the parameter file), "urdf/quirobot.urdf.xacro", "config/control.yaml",
"config/tasks/incision.yaml", "config/quirobot_drive.eds". `find_data_file(name)` returns the
first of these that exists:

1. package data beside the modules: <packages root>/quirobot_description/<name> (the parameter
   file, the xacro, the meshes: setup.py's package_data; in a source checkout the packages root
   is the repository);
2. the repository root of a source checkout (package.xml beside the packages): config/...;
3. share/quirobot of the prefix that holds the packages (pip into a venv or --prefix:
   <prefix>/lib/pythonX.Y/site-packages; pip --target: the target itself; colcon:
   install/quirobot), so the data come with the code that runs;
4. share/quirobot of the first prefix on AMENT_PREFIX_PATH whose ament index lists quirobot
   (what ament_index_python's get_package_share_directory does; read here without ROS);
5. share/quirobot under sys.prefix (pip's data_files in the running environment).

The xacro's relative path to the parameter file (../quirobot.yaml) holds in each place: urdf/
and quirobot.yaml are side by side in quirobot_description/ and in share/quirobot/. Everything
else the stack is configured with is in config/ (one home; share/quirobot/config installed).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path, PurePosixPath

PACKAGE = "quirobot"
#: Python packages whose folders hold package data (setup.py package_data), in search order.
DATA_PACKAGES = ("quirobot_description",)
#: The packages root: the repository in a source checkout, site-packages (or a --target) installed.
PACKAGES_ROOT = Path(__file__).resolve().parents[1]


class DataFileNotFoundError(FileNotFoundError):
    """No place holds the data file; the message names the file and every place looked."""


def _is_source_checkout() -> bool:
    """The packages root is a repository (package.xml beside the packages), not site-packages."""
    return (PACKAGES_ROOT / "package.xml").is_file()


def _share_directories() -> list[Path]:
    """share/quirobot candidates of an install (places 3-5 of the module docstring), no duplicates."""
    share = Path("share") / PACKAGE
    prefixes = []
    if not _is_source_checkout():
        prefixes.append(PACKAGES_ROOT)  # pip --target: share/ beside the packages
        if PACKAGES_ROOT.parent.parent.name == "lib":  # <prefix>/lib/pythonX.Y/site-packages
            prefixes.append(PACKAGES_ROOT.parents[2])
    marker = Path("share") / "ament_index" / "resource_index" / "packages" / PACKAGE
    ament = [Path(p) for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    prefixes += [prefix for prefix in ament if (prefix / marker).is_file()][:1]
    prefixes.append(Path(sys.prefix))
    directories: list[Path] = []
    for prefix in prefixes:
        directory = prefix.resolve() / share
        if directory not in directories:
            directories.append(directory)
    return directories


def data_file_candidates(name: str) -> list[Path]:
    """Every path `find_data_file(name)` tries, in order (see the module docstring)."""
    relative = PurePosixPath(name)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        raise ValueError(f"a data file name is a relative path under share/{PACKAGE}, got {name!r}")
    candidates = [PACKAGES_ROOT / package / relative for package in DATA_PACKAGES]
    if _is_source_checkout():
        candidates.append(PACKAGES_ROOT / relative)
    candidates += [directory / relative for directory in _share_directories()]
    return candidates


def find_data_file(name: str) -> Path:
    """The data file `name` (a path under share/quirobot, e.g. "config/control.yaml").

    Raises DataFileNotFoundError (a FileNotFoundError) naming `name` and every place looked.
    """
    candidates = data_file_candidates(name)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise DataFileNotFoundError(f"cannot find {name} (looked in {', '.join(map(str, candidates))})")
