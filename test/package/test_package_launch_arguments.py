"""Launch arguments name their choices and conditions use no deprecated API (plain Python, no ROS).

Generic over launch/*.py like test_package_launch_files.py: a new argument either gets `choices`
or is named here as free-form. test/ros/test_launch_gazebo_print.py checks the choices that
`ros2 launch --show-args` prints and that launch warns of nothing.
"""

from __future__ import annotations

import ast

import pytest
from test_package_launch_files import LAUNCH_FILES, _calls, _string_argument

#: Arguments whose value is not one of a fixed set, and why.
FREE_FORM = {
    "world": "any Gazebo world file",
    "namespace": "any ROS namespace",
    "controller_rate": "a rate in Hz; drive_node refuses one that does not divide the drives' rate",
    "task": "a shipped task name or any task file path",
    "calibration": "a calibration file path (empty: the nominal model), checked at launch",
    "bone": "none, a shipped incision or an incision task file, checked at launch",
    "simulated_bone": "none, a shipped incision or an incision task file, checked at launch",
    "machine": "a simulated machine's seed (-1: the nominal one); drive_node refuses one out of range",
}
#: Deprecated since launch 1.1.0 (Jazzy's launch warns "Use the 'EqualsSubstitution' and
#: 'NotEqualsSubstitution' substitutions instead"); PythonExpression for a string comparison is
#: what EqualsSubstitution does without evaluating Python.
DEPRECATED = ("LaunchConfigurationEquals", "LaunchConfigurationNotEquals", "PythonExpression")


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_every_argument_with_a_fixed_set_of_values_declares_its_choices(path):
    tree = ast.parse(path.read_text())
    for call in _calls(tree, "DeclareLaunchArgument"):
        name = _string_argument(call, "name")
        keywords = {k.arg for k in call.keywords}
        if name in FREE_FORM:
            assert "choices" not in keywords, f"{path.name}: {name} is listed as free-form"
        else:
            assert "choices" in keywords, f"{path.name}: argument {name!r} has no choices"


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_no_deprecated_condition_or_python_expression(path):
    source = path.read_text()
    tree = ast.parse(source)
    for name in DEPRECATED:
        assert not _calls(tree, name), f"{path.name} calls {name}"
        assert name not in source, f"{path.name} imports or names {name}"


def test_the_checks_can_fail():
    """The AST helpers see a LaunchConfigurationEquals condition and an argument without choices."""
    tree = ast.parse(
        "DeclareLaunchArgument('tool', default_value='drill', description='d')\n"
        "Node(condition=LaunchConfigurationEquals('hardware', 'real'))\n"
    )
    assert _calls(tree, "LaunchConfigurationEquals")
    (argument,) = _calls(tree, "DeclareLaunchArgument")
    assert "choices" not in {k.arg for k in argument.keywords}
