"""The arthroscopy task file the ROS-tier tests give scope_servo_node: the shipped one with its
dead-man timeout (also the oldest twist accepted) and joint-state age limit widened to 2 s and
4 s, so that a test's own publishers, and the node itself, late on a loaded 2-core machine (at a
load of 7 joint states arrived 0.25 s late; at 14 the node fell more than 1 s behind its twists),
are not what the node refuses. The rules are the node's; their numbers
at the shipped values are tested in the core (test/control/procedures/test_scope_servo.py).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import yaml

from quirobot_control.planning.arthroscopy import ArthroscopyTask, load_arthroscopy
from quirobot_description.data_files import find_data_file

#: s: the widened limits
TIMEOUT = 2.0
JOINT_STATE_TIMEOUT = 4.0
SOURCE = "test/ros/scope_task.py: widened for a loaded test machine"


def loaded_machine_task() -> tuple[Path, ArthroscopyTask]:
    """(path, task): the task file written to a fresh temporary folder, and the task it loads."""
    raw = yaml.safe_load(find_data_file("config/tasks/arthroscopy.yaml").read_text())
    raw["timeout"] = {"value": TIMEOUT, "unit": "s", "source": SOURCE}
    raw["joint_state_timeout"] = {"value": JOINT_STATE_TIMEOUT, "unit": "s", "source": SOURCE}
    path = Path(tempfile.mkdtemp(prefix="quirobot-scope-")) / "arthroscopy_ros_tier.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path, load_arthroscopy(path)
