"""docs/architecture.md cannot go stale silently: its tables are scripts/docs_architecture.py's,
every topic, service and action it names exists in the code (launch/, the nodes, their parameter
schemas, the URDF's ros2_control block), every name a node creates is in it, every thread it names
is started under that name, every safety check's module exists, and its ten files to read first
exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from repo_scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
script = load_script("docs_architecture")
PAGE = script.PAGE.read_text()

#: The files that name the stack's topics, services and actions.
PYTHON = [
    *sorted((ROOT / "launch").glob("*.py")),
    *sorted((ROOT / "quirobot_control" / "nodes").rglob("*.py")),
    *sorted((ROOT / "quirobot_kinematics" / "nodes").rglob("*.py")),
    *sorted(ROOT.glob("quirobot_*/**/*_parameters.py")),
]
TEXT = [
    *sorted((ROOT / "quirobot_description" / "urdf").glob("*.xacro")),
    ROOT / "config" / "controllers.yaml",
]
#: Calls that create a ROS entity, and the position of its name among their arguments.
CREATORS = {
    "create_publisher": 1,
    "create_lifecycle_publisher": 1,
    "create_subscription": 1,
    "create_service": 1,
    "create_client": 1,
    "ActionServer": 2,
    "ActionClient": 2,
    "race_free_action_client": 2,
}
WORD = r"[A-Za-z0-9_]+"


def _template(node: ast.JoinedStr) -> str:
    """An f-string as a regular expression: each {placeholder} one name segment."""
    return "".join(
        re.escape(part.value) if isinstance(part, ast.Constant) else f"({WORD})" for part in node.values
    )


class CodeNames:
    """The strings and f-string templates of the code files, and the names the nodes create."""

    def __init__(self) -> None:
        self.constants: set[str] = set()
        self.templates: set[str] = set()
        self.created: list[tuple[str, str]] = []  # (file, regular expression of the name)
        self.namespaces: set[str] = set()
        for path in PYTHON:
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    self.constants.add(node.value)
                elif isinstance(node, ast.JoinedStr):
                    self.templates.add(_template(node))
                elif isinstance(node, ast.Call):
                    self._call(path, node)
        for path in TEXT:
            self.constants.update(re.findall(r"[~/A-Za-z0-9_]+", path.read_text()))

    def _call(self, path: Path, call: ast.Call) -> None:
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        keywords = {k.arg: k.value for k in call.keywords}
        if name == "DeclareLaunchArgument" and ast.literal_eval(call.args[0]) == "namespace":
            self.namespaces.add(ast.literal_eval(keywords["default_value"]))
        position = CREATORS.get(name)
        if position is None or len(call.args) <= position:
            return
        argument = call.args[position]
        if isinstance(argument, ast.Constant):
            self.created.append((path.name, re.escape(argument.value)))
        elif isinstance(argument, ast.JoinedStr):
            self.created.append((path.name, _template(argument).replace(f"({WORD})", ".+")))
        # else a parameter (a topic's name): its default is a constant of the parameter schema

    def exists(self, name: str) -> bool:
        """`name` is spelt in the code: a string, an f-string whose placeholders are strings of
        the code, or a node's relative name in a launch file's namespace."""
        if name in self.constants:
            return True
        for template in self.templates:
            found = re.fullmatch(template, name)
            if found and all(value in self.constants for value in found.groups()):
                return True
        return any(name == f"/{ns}/{relative}" for ns in self.namespaces for relative in self.constants)

    def unlisted(self, listed: list[str]) -> list[str]:
        """The names the nodes create (file: pattern) that no name of `listed` is."""
        return [
            f"{file}: {pattern}"
            for file, pattern in self.created
            if not any(re.fullmatch(pattern, name) or re.fullmatch(f".*/{pattern}", name) for name in listed)
        ]


CODE = CodeNames()
LISTED = [interface.name for interface in script.INTERFACES]


def test_the_page_holds_the_generated_tables():
    assert script.stale_blocks(PAGE) == [], "run `python scripts/docs_architecture.py --write`"
    for interface in script.INTERFACES:
        assert f"| `{interface.name}` |" in PAGE


def test_the_check_of_the_tables_can_fail():
    changed = PAGE.replace("`/quirobot/joint_commands`", "`/quirobot/joint_command`")
    assert script.stale_blocks(changed) == ["interface"]


def test_every_listed_name_exists_in_the_code():
    """A name not spelt by any file of ours must say which ROS package's default it is."""
    missing = [i.name for i in script.INTERFACES if not CODE.exists(i.name) and not i.upstream]
    assert missing == [], f"docs/architecture.md names what the code does not: {missing}"


def test_the_existence_check_can_fail():
    assert CODE.exists("/quirobot/drives/acknowledge_stop")  # f"/quirobot/drives/{name}"
    assert CODE.exists("/joint_trajectory_controller/follow_joint_trajectory")
    assert CODE.exists("/quirobot/compute_fk")  # "compute_fk" in kinematics.launch.py's namespace
    assert not CODE.exists("/quirobot/drives/reset")
    assert not CODE.exists("/quirobot/drill_holes")
    assert not CODE.exists("/quirobot/compute_jacobian")


def test_every_name_a_node_creates_is_listed():
    assert CODE.created, "no create_publisher/create_service/... call found in the nodes"
    assert CODE.unlisted(LISTED) == [], "a node creates a name docs/architecture.md does not list"


def test_the_completeness_check_can_fail():
    assert CODE.unlisted([name for name in LISTED if name != "/quirobot/scope/view_cone"]) == [
        "scope_servo_node.py: /quirobot/scope/view_cone"
    ]


def _started_threads() -> set[str]:
    """The `name=` of every threading.Thread the packages start."""
    names = set()
    for path in ROOT.glob("quirobot_*/**/*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", getattr(node.func, "id", "")) == "Thread"
            ):
                names.update(
                    k.value.value
                    for k in node.keywords
                    if k.arg == "name" and isinstance(k.value, ast.Constant)
                )
    return names


def test_every_named_thread_is_started_under_that_name():
    generic = {"executor", script.TASK_EXECUTOR, "update loop", "render"}
    started = _started_threads()
    assert {"drive-cycle", "task_node inputs"} <= started
    for process in script.PROCESSES:
        for thread in process.threads:
            assert thread.name in generic or thread.name in started, (process.name, thread.name)
    assert (
        "MultiThreadedExecutor(num_threads=4)" in (ROOT / "quirobot_control/nodes/task_node.py").read_text()
    )


def test_every_process_is_launched_by_our_launch_files():
    launched = "\n".join(path.read_text() for path in (ROOT / "launch").glob("*.py"))
    for process in script.PROCESSES:
        assert f'executable="{process.name}"' in launched, process.name


def test_every_check_names_a_module_a_process_and_a_thread_that_exist():
    processes = {process.name: process for process in script.PROCESSES}
    for check in script.CHECKS:
        assert (ROOT / check.module).is_file(), check.module
        threads = {thread.name for thread in processes[check.process].threads}
        named = {part.split(" (")[0] for part in check.thread.split(" or ")} | {check.thread}
        assert threads & named or check.thread.startswith("the drives"), check


def test_every_drawn_pair_has_its_arrow():
    assert set(script.picture_pairs()) == set(script.ROUTES)
    assert script.IMAGE.is_file() and "images/architecture.png" in PAGE


def test_the_ten_files_to_read_first_exist():
    section = PAGE.split("## The ten files to read first", 1)[1].split("\n## ", 1)[0]
    files = re.findall(r"^\d+\. \[`([^`]+)`\]", section, flags=re.MULTILINE)
    assert len(files) == 10, files
    for file in files:
        assert (ROOT / file).exists(), file
