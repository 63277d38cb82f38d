"""The nodes declare their parameters only through their schema, read every one of them, and the
launch files set only parameters the schemas declare (config/kinematics.yaml:
test_package_kinematics_yaml.py).

Read from the source (ast), so it runs without ROS; the ROS tier checks the running nodes'
descriptors (test/ros/test_node_parameters_rclpy.py, test/ros/test_launch_kinematics.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from quirobot_control.bridge.drive_node_parameters import DRIVE_NODE
from quirobot_control.procedures import task_node_parameters
from quirobot_control.procedures.scope_servo_parameters import SCOPE_SERVO_NODE
from quirobot_control.procedures.task_node_parameters import TASK_NODE
from quirobot_kinematics.kinematics_node_parameters import KINEMATICS_NODE

ROOT = Path(__file__).resolve().parents[2]
NODES = {
    "drive_node": (ROOT / "quirobot_control" / "nodes" / "drive_node.py", DRIVE_NODE, "DRIVE_NODE"),
    "task_node": (ROOT / "quirobot_control" / "nodes" / "task_node.py", TASK_NODE, "TASK_NODE"),
    "scope_servo_node": (
        ROOT / "quirobot_control" / "nodes" / "scope_servo_node.py",
        SCOPE_SERVO_NODE,
        "SCOPE_SERVO_NODE",
    ),
    "kinematics_node": (
        ROOT / "quirobot_kinematics" / "nodes" / "kinematics_node.py",
        KINEMATICS_NODE,
        "KINEMATICS_NODE",
    ),
}
#: Parameters every ROS node has (rclpy declares it), which launch files may set.
BUILTIN = {"use_sim_time"}


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (getattr(node.func, "attr", None) == name or getattr(node.func, "id", None) == name)
    ]


def _keys_read(tree: ast.AST, variable: str) -> set[str]:
    """The string keys subscripted on `variable` (values["name"])."""
    return {
        node.slice.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id == variable
        and isinstance(node.slice, ast.Constant)
    }


@pytest.mark.parametrize("node", NODES)
def test_a_node_declares_through_its_schema_only_and_reads_every_parameter(node):
    path, schema, schema_name = NODES[node]
    tree = ast.parse(path.read_text())
    assert not _calls(tree, "declare_parameter"), f"{path.name}: a bare declare_parameter call"
    (call,) = _calls(tree, "declare_parameters")
    assert [getattr(arg, "id", None) for arg in call.args][1:] == [schema_name]
    read = _keys_read(tree, "parameters")
    if node == "task_node":  # its timing goes through executor_timing
        read |= _keys_read(ast.parse(Path(task_node_parameters.__file__).read_text()), "values")
    assert read == set(schema.names), f"{node} reads {sorted(read ^ set(schema.names))} unlike its schema"
    assert schema.node == node


def test_kinematics_node_changes_at_run_time_exactly_its_writable_parameters():
    path = NODES["kinematics_node"][0]
    callback = next(
        node
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef) and node.name == "_on_parameters"
    )
    handled = {
        comparator.value
        for compare in ast.walk(callback)
        if isinstance(compare, ast.Compare)
        for comparator in compare.comparators
        if isinstance(comparator, ast.Constant) and isinstance(comparator.value, str)
    }
    assert handled == {p.name for p in KINEMATICS_NODE.parameters if not p.read_only}


def _launch_parameters() -> list[tuple[str, str, set[str]]]:
    """(launch file, executable, keys of its literal parameter dicts) of every Node (or
    LifecycleNode) of ours."""
    found = []
    for path in sorted((ROOT / "launch").glob("*.launch.py")):
        tree = ast.parse(path.read_text())
        for call in _calls(tree, "Node") + _calls(tree, "LifecycleNode"):
            keywords = {k.arg: k.value for k in call.keywords}
            executable = keywords.get("executable")
            if not isinstance(executable, ast.Constant) or executable.value not in NODES:
                continue
            keys = set()
            for entry in getattr(keywords.get("parameters"), "elts", []):
                if isinstance(entry, ast.Dict):
                    keys |= {k.value for k in entry.keys if isinstance(k, ast.Constant)}
            found.append((path.name, executable.value, keys))
    return found


def test_the_launch_files_set_only_declared_parameters():
    found = _launch_parameters()
    assert {executable for _, executable, _ in found} == set(NODES)  # the check could not pass empty
    for launch_file, executable, keys in found:
        unknown = keys - set(NODES[executable][1].names) - BUILTIN
        assert not unknown, f"{launch_file} sets {executable} parameters its schema lacks: {sorted(unknown)}"
