"""pip install of `quirobot` (ROS-free core, CLI): description, kinematics and control of QUIROBOT.

colcon builds the ROS 2 package with CMakeLists.txt instead (package.xml: ament_cmake, the
interfaces need rosidl); both read what to install from install_manifest.json (CMake through
cmake/install_manifest.cmake), so they install the same share/quirobot files and executables.
"""

import json
import os
from glob import glob

from setuptools import Extension, find_packages, setup

PACKAGE = "quirobot"
ROOT = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(ROOT, "install_manifest.json"), encoding="utf-8") as stream:
    MANIFEST = json.load(stream)


def share(folder: str, patterns: list[str]) -> tuple[str, list[str]]:
    """One data_files entry: the files matching `patterns` (relative to the repository; sorted, as
    CMake's file(GLOB)) installed into share/quirobot/folder."""
    files = sorted(
        os.path.relpath(path, ROOT)
        for pattern in patterns
        for path in glob(os.path.join(ROOT, pattern))
        if os.path.isfile(path)
    )
    if not files:
        raise SystemExit(f"install_manifest.json: share/{folder} patterns {patterns} match no file")
    return (f"share/{PACKAGE}/{folder}", files)


setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(include=[f"{name}*" for name in MANIFEST["python_packages"]]),
    # Data files: package data beside the modules (the parameter file, the xacro, the EDS) and
    # the whole share/quirobot tree; quirobot_description/data_files.py finds them in either.
    package_data=MANIFEST["package_data"],
    data_files=[
        # pip only: colcon's ament_package() installs these two itself.
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        *(share(folder, patterns) for folder, patterns in MANIFEST["share"].items()),
    ],
    # Compiled twins of Python modules (the drives' current loop: drive_simulators/current_loop.py):
    # optional, so an install without a C compiler or Python's headers goes on with the Python
    # twin (same results, slower).
    ext_modules=[
        Extension(module, [source], extra_compile_args=MANIFEST["c_flags"], optional=True)
        for module, source in MANIFEST["c_extensions"].items()
    ],
    # The simulation's pinned MuJoCo (requirements.txt) needs 3.11 (= ruff's target-version);
    # CI tests 3.11.
    python_requires=">=3.11",
    install_requires=["setuptools", "numpy", "PyYAML"],
    zip_safe=True,
    maintainer="Quirobot developers",
    maintainer_email="dev@quirobot.org",
    description="QUIROBOT ceiling-mounted orthopaedic surgical robot: model, kinematics, control",
    license="Apache-2.0",
    tests_require=["pytest"],
    entry_points={
        "console_scripts": [f"{name} = {target}" for name, target in MANIFEST["executables"].items()],
    },
)
