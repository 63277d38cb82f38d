"""Procedures as plug-ins: one interface, one registry keyed by the task name.

A procedure is what the robot does with one tool (drilling an incision, holding the arthroscope,
inserting a pin). It declares its tool, its phases, the task-file kind it reads (`name`: the `task:`
key of config/tasks/<name>.yaml and `quirobot simulate --task <name>`), the CLI options it takes,
the summary rows of its metrics and their targets, and it loads, plans, checks its virtual
fixtures, runs (its monitors inside) and reports a run. Callers (the CLI, tests) look it up with
`procedure_for(name)` and never branch on the task's type.

Adding a procedure touches its own module and its task file only: `register(procedure)` at import,
or a line in BUILTIN (name -> module), which the registry imports on first use like an entry
point. Why a lazy module table rather than importing the implementations here: they run
simulations, which live in a layer above this one (.importlinter); the registry must not depend on
them. Rejected: a typing.Protocol checked at runtime for every method (isinstance on a Protocol
checks names only); `register` checks the attributes instead and says which one is missing.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from quirobot_description.data_files import find_data_file

__all__ = [
    "BUILTIN",
    "Procedure",
    "ProcedureError",
    "SummaryRow",
    "procedure_for",
    "procedure_names",
    "register",
    "task_kind",
]


class ProcedureError(ValueError):
    """An unknown procedure, a task file naming none, or a procedure missing part of the interface."""


@dataclass(frozen=True)
class SummaryRow:
    """One row of `quirobot simulate`'s table: label, metric key, scale to the shown unit, unit."""

    label: str
    key: str
    scale: float
    unit: str


class Procedure(Protocol):
    """The interface every procedure implements (module docstring)."""

    name: str  # the task kind: `task:` in its file, `quirobot simulate --task NAME`
    tool: str  # the tool it carries: "drill", "arthroscope" or "none"
    phases: tuple[str, ...]  # its plan's phase names, in order
    options: frozenset[str]  # the CLI's task options it takes ("depth", "feed_rate", "max_thrust", "inject")
    summary_rows: tuple[SummaryRow, ...]  # its metrics in the CLI table
    targets: Mapping[str, float]  # metric key -> its upper bound (SI units)
    panels: tuple[str, ...]  # its task panels in the run's figure (reporting.plots.PANELS names)

    def load(self, path: Path) -> Any:
        """The task read from its file (the procedure's own dataclass)."""

    def plan(self, task: Any, params: Any, dt: float) -> Any:
        """The task's JointTrajectory (dt: s), phases named as `phases`."""

    def fixtures(self, task: Any, params: Any) -> Any:
        """The task's VirtualFixtures (no-go zones, speed limits) on this robot's tool."""

    def simulate(self, task: Any, params: Any, **options: Any) -> Any:
        """Plan and run the task in closed loop with its monitors: a result with .task,
        .trajectory, .log, .metrics (an object with as_dict()) and .unsafe (list of reasons)."""

    def document(self, result: Any, base: dict[str, Any]) -> dict[str, Any]:
        """The `--json` document: `base` ({"metrics", "log", "plot"}) with the procedure's parts."""


#: The shipped procedures: task name -> the module that registers it when imported.
BUILTIN: dict[str, str] = {
    "incision": "quirobot_control.simulation.drilling_procedure",
    "line": "quirobot_control.simulation.drilling_procedure",
    "arthroscopy": "quirobot_control.simulation.arthroscopy_procedure",
    "pin": "quirobot_control.simulation.pin_procedure",
}
_REGISTRY: dict[str, Procedure] = {}
_REQUIRED = ("name", "tool", "phases", "options", "summary_rows", "targets", "panels", "load", "plan")
_REQUIRED += ("fixtures", "simulate", "document")


def register(procedure: Procedure) -> Procedure:
    """Add a procedure under its name (a second one with that name replaces the first)."""
    missing = [attribute for attribute in _REQUIRED if not hasattr(procedure, attribute)]
    if missing:
        raise ProcedureError(f"{type(procedure).__name__} is not a procedure: it has no {', '.join(missing)}")
    if not isinstance(procedure.name, str) or not procedure.name.isidentifier():
        raise ProcedureError(f"a procedure's name must be an identifier, got {procedure.name!r}")
    _REGISTRY[procedure.name] = procedure
    return procedure


def procedure_names() -> tuple[str, ...]:
    """Every known task name: the shipped ones, then those registered since."""
    return tuple(dict.fromkeys([*BUILTIN, *_REGISTRY]))


def procedure_for(name: str) -> Procedure:
    """The procedure of a task name (ProcedureError naming the known ones if there is none)."""
    if name not in _REGISTRY and name in BUILTIN:
        importlib.import_module(BUILTIN[name])
    if name not in _REGISTRY:
        raise ProcedureError(f"unknown task {name!r}: give one of {', '.join(procedure_names())}")
    return _REGISTRY[name]


def task_kind(name_or_path: str | Path) -> tuple[str, Path]:
    """(task name, task file) of a shipped task's name or a task file's path (its `task:` key)."""
    text = str(name_or_path)
    if text in procedure_names():
        return text, find_data_file(f"config/tasks/{text}.yaml")
    path = Path(text)
    if path.suffix not in (".yaml", ".yml"):
        raise ProcedureError(
            f"unknown task {text!r}: give one of {', '.join(procedure_names())} or a path to a .yaml file"
        )
    from quirobot_description.sourced_yaml import read_yaml_mapping

    kind = read_yaml_mapping(path, ProcedureError, "task file").get("task")
    if kind is None:
        raise ProcedureError(
            f"{path} is not a task file: it has no 'task' key (task: {' or '.join(procedure_names())}); "
            "the shipped tasks are in config/tasks"
        )
    if not isinstance(kind, str) or kind not in procedure_names():
        raise ProcedureError(
            f"{path.name}: task must be one of {', '.join(procedure_names())}, got {kind!r:.40}"
        )
    return kind, path
