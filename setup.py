"""pip install of `quirobot` (ROS-free core, CLI): description, kinematics and control of QUIROBOT.

colcon builds the ROS 2 package with CMakeLists.txt instead (package.xml: ament_cmake, the
interfaces need rosidl); both install the same share/quirobot files and executables.
"""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = "quirobot"


def share(folder: str, pattern: str = "*") -> tuple[str, list[str]]:
    """One data_files entry installing `folder/pattern` into share/quirobot/folder."""
    return (
        f"share/{PACKAGE}/{folder}",
        sorted(f for f in glob(f"{folder}/{pattern}") if "." in f.rsplit("/", 1)[-1]),
    )


setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(
        include=["quirobot_description*", "quirobot_kinematics*", "quirobot_control*", "quirobot_cli*"]
    ),
    # Data files: package data beside the modules (the parameter file, the xacro, the EDS) and
    # the whole share/quirobot tree; quirobot_description/data_files.py finds them in either.
    package_data={
        "quirobot_description": ["config/*.yaml", "urdf/*.xacro"],
        "quirobot_control": ["config/*.eds"],
    },
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        # urdf/ and config/ stay siblings after install, so the xacro's relative
        # path to the parameter file resolves in the source tree and in share/.
        (f"share/{PACKAGE}/urdf", sorted(glob("quirobot_description/urdf/*.xacro"))),
        (
            f"share/{PACKAGE}/config",
            sorted(
                glob("quirobot_description/config/*.yaml")
                + glob("quirobot_control/config/*.eds")
                + glob("config/*.yaml")
            ),
        ),
        share("config/tasks", "*.yaml"),
        share("launch", "*.py"),
        share("rviz", "*.rviz"),
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
        "console_scripts": [
            "quirobot = quirobot_cli.cli:main",
            "kinematics_node = quirobot_kinematics.nodes.kinematics_node:main",
            "drive_node = quirobot_control.nodes.drive_node:main",
            "task_node = quirobot_control.nodes.task_node:main",
        ],
    },
)
