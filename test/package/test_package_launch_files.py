"""Every launch file compiles and declares the arguments it reads (plain Python, no ROS needed).

Generic over launch/*.py, so launch files added later are checked too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from quirobot_description import launch_description
from quirobot_description.urdf import TOOLS, XACRO_FILE, DescriptionError

ROOT = Path(__file__).resolve().parents[2]
LAUNCH_FILES = sorted((ROOT / "launch").glob("*.launch.py"))
#: The module that builds robot_description for the launch files (its paths are checked too).
DESCRIPTION_HELPER = Path(launch_description.__file__)
#: Launch files that take robot_description from the helper rather than building it by hand.
HELPER_USERS = ("bringup.launch.py", "display.launch.py", "gazebo.launch.py")


def test_there_are_launch_files():
    assert (ROOT / "launch" / "display.launch.py") in LAUNCH_FILES
    assert sorted((ROOT / "launch").glob("*.py")) == LAUNCH_FILES, "launch files end in .launch.py"


def _string_argument(call: ast.Call, keyword: str) -> str | None:
    if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        return call.args[0].value
    for item in call.keywords:
        if item.arg == keyword and isinstance(item.value, ast.Constant):
            return item.value.value
    return None


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if callee == name:
                found.append(node)
    return found


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_compiles_and_declares_its_arguments(path):
    source = path.read_text()
    compile(source, str(path), "exec")  # syntax
    tree = ast.parse(source)
    functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert "generate_launch_description" in functions
    declared = {}
    for call in _calls(tree, "DeclareLaunchArgument"):
        name = _string_argument(call, "name")
        assert name, f"{path.name}: DeclareLaunchArgument without a literal name"
        assert name not in declared, f"{path.name}: argument {name!r} declared twice"
        declared[name] = call
        keywords = {k.arg for k in call.keywords}
        assert "description" in keywords, f"{path.name}: argument {name!r} has no description"
    used = {_string_argument(call, "variable_name") for call in _calls(tree, "LaunchConfiguration")}
    used.discard(None)
    assert used <= set(declared), f"{path.name}: reads undeclared arguments {sorted(used - set(declared))}"
    unused = set(declared) - used
    assert not unused, f"{path.name}: declares arguments it never reads {sorted(unused)}"


def _source_of(relative: list[str]) -> Path:
    """Where a share/quirobot file comes from in the source tree (see setup.py data_files)."""
    candidates = [ROOT / Path(*relative)]
    if relative[0] in ("urdf", "config"):
        candidates.insert(0, ROOT / "quirobot_description" / Path(*relative))
    return next((c for c in candidates if c.exists()), candidates[-1])


@pytest.mark.parametrize("path", [*LAUNCH_FILES, DESCRIPTION_HELPER], ids=lambda p: p.name)
def test_launch_file_refers_to_installed_files(path):
    """PathJoinSubstitution([<share of quirobot>, "dir", "file"]) names a file of the source tree."""
    tree = ast.parse(path.read_text())
    for call in _calls(tree, "PathJoinSubstitution"):
        if not call.args or not isinstance(call.args[0], ast.List) or len(call.args[0].elts) < 2:
            continue
        head, *rest = call.args[0].elts
        ours = isinstance(head, ast.Name) or (
            isinstance(head, ast.Call) and _string_argument(head, "package") == "quirobot"
        )
        relative = [part.value for part in rest if isinstance(part, ast.Constant)]
        if ours and len(relative) == len(rest):
            assert _source_of(relative).exists(), (
                f"{path.name} refers to {'/'.join(relative)}, not in the tree"
            )


def test_description_helper_names_the_xacro_file_of_the_source_tree():
    tree = ast.parse(DESCRIPTION_HELPER.read_text())
    joined = [
        [part.value for part in call.args[0].elts if isinstance(part, ast.Constant)]
        for call in _calls(tree, "PathJoinSubstitution")
    ]
    assert joined == [["urdf", XACRO_FILE.name]]
    assert _source_of(joined[0]) == XACRO_FILE


@pytest.mark.parametrize("name", HELPER_USERS)
def test_launch_file_takes_robot_description_from_the_helper(name):
    tree = ast.parse((ROOT / "launch" / name).read_text())
    assert _calls(tree, "robot_description_parameter"), f"{name} does not call robot_description_parameter"
    for by_hand in ("ParameterValue", "Command"):
        assert not _calls(tree, by_hand), f"{name} builds robot_description by hand ({by_hand})"


def test_xacro_argument_parts():
    substitution = object()  # stands for a LaunchConfiguration: passed through untouched
    parts = launch_description.xacro_argument_parts(tool=substitution, hardware="gazebo")
    assert parts[0] == " tool:=" and parts[1] is substitution
    assert parts[2:] == [" hardware:=", "gazebo"]
    for tool in TOOLS:
        assert launch_description.xacro_argument_parts(tool=tool) == [" tool:=", tool]


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"tool": "laser"}, "unknown tool 'laser'"),
        ({"hardware": "sim"}, "unknown hardware 'sim'"),
        ({"robot": "drill"}, "unknown xacro argument 'robot'"),
        ({"parameter_file": "/tmp/my file.yaml"}, "parameter_file must be one word"),
        ({"controllers_file": ""}, "controllers_file must be one word"),
    ],
)
def test_xacro_argument_parts_refuse_bad_literals(arguments, fragment):
    with pytest.raises(DescriptionError, match=fragment):
        launch_description.xacro_argument_parts(**arguments)
