"""The hardware tests' shared fixtures: the shipped control configuration and the drill's
ros2_control block (hardware "real")."""

from __future__ import annotations

import pytest

from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.hardware.hardware_info import hardware_info_from_urdf
from quirobot_description.urdf import robot_description


@pytest.fixture(scope="module")
def control(parameters):
    return control_configuration(parameters)


@pytest.fixture(scope="module")
def info():
    return hardware_info_from_urdf(robot_description("drill", "real"))
