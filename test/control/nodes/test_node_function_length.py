"""The ROS nodes stay thin: no function and no class in a module under quirobot_*/nodes is longer
than MAX_LINES (issue 20: behaviour that needs a longer function belongs in the ROS-free core;
issue 35 item 2: classes too, a 262-line motion port and DriveNode were not caught).

ROS-free: the modules are parsed with `ast`, never imported. A definition's length is its span in
the source, decorators and docstring included (`end_lineno - lineno + 1`); nested functions,
classes and methods count on their own and inside their parent.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
#: lines: about a screen (docs/../shared/reference/style.md, section 7).
MAX_LINES = 150
NODE_MODULES = sorted(ROOT.glob("quirobot_*/nodes/*.py"))


def long_functions(source: str, limit: int) -> list[tuple[str, int]]:
    """(qualified name, lines) of every function and class in `source` longer than `limit` lines."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = f"{prefix}{getattr(child, 'name', '')}"
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                lines = child.end_lineno - first + 1
                if lines > limit:
                    found.append((name, lines))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def test_the_node_modules_are_found() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in NODE_MODULES}
    assert {
        "quirobot_control/nodes/drive_node.py",
        "quirobot_control/nodes/task_node.py",
        "quirobot_kinematics/nodes/kinematics_node.py",
    } <= names


@pytest.mark.parametrize("path", NODE_MODULES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_node_function_or_class_is_longer_than_a_screen(path: Path) -> None:
    too_long = long_functions(path.read_text(), MAX_LINES)
    assert not too_long, "; ".join(
        f"{path.relative_to(ROOT)}: {name} is {lines} lines (at most {MAX_LINES})" for name, lines in too_long
    )


def test_the_check_fails_on_a_long_function_and_names_it() -> None:
    """The check can fail: a method of 151 lines (decorator included) is found by its qualified
    name; one of 150 is not."""
    body = "".join(f"        x{k} = {k}\n" for k in range(148))
    source = f"class Node:\n    @staticmethod\n    def spin():\n{body}        return 0\n"
    assert long_functions(source, MAX_LINES) == [("Node", 152), ("Node.spin", 151)]
    assert long_functions(source, MAX_LINES + 2) == []


def test_the_check_fails_on_a_long_class_and_names_it() -> None:
    """A class of 151 lines made of short methods is found; its methods are not."""
    methods = "".join(f"    def m{k}(self):\n        return {k}\n" for k in range(75))
    source = f"class Port:\n{methods}"
    assert long_functions(source, MAX_LINES) == [("Port", 151)]
    assert long_functions(source, MAX_LINES + 1) == []
