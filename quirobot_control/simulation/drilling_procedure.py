"""The drilled incision and the report's straight line as procedures (procedures.procedure).

Both run through `simulation.incision.run_task` (the closed loop with the drilling monitor and the
spindle for an incision) and read config/tasks with `planning.tasks.load_task`; this module only
declares them: tool, phases, CLI options, summary rows, targets and the `--json` document, which
is exactly what `quirobot simulate` printed before procedures became plug-ins
(test/cli/test_simulate_json_unchanged.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from quirobot_control.planning.tasks import load_task, plan_incision, plan_line_task, task_fixtures
from quirobot_control.procedures.procedure import SummaryRow, register
from quirobot_control.simulation.incision import TARGETS, run_task

_COMMON_TARGETS = {key: TARGETS[key] for key in ("controller_p99", "real_time_factor")}


@dataclass(frozen=True)
class DrillingProcedure:
    """Drill a pilot hole: approach, align, feed through the bone, dwell, retract, withdraw, park."""

    name: str = "incision"
    tool: str = "drill"
    phases: tuple[str, ...] = ("start", "approach", "align", "settle", "feed", "dwell", "retract")
    phases += ("withdraw", "park", "end")
    options: frozenset[str] = frozenset({"depth", "feed_rate", "max_thrust", "inject"})
    summary_rows: tuple[SummaryRow, ...] = (
        SummaryRow("entry-point error", "entry_error", 1e6, "um"),
        SummaryRow("lateral deviation (feed)", "lateral_deviation", 1e6, "um"),
        SummaryRow("depth overshoot", "depth_overshoot", 1e6, "um"),
        SummaryRow("final depth error", "final_depth_error", 1e6, "um"),
        SummaryRow("peak bone thrust", "peak_thrust", 1.0, "N"),
    )
    panels: tuple[str, ...] = ("depth", "tip_error", "thrust")
    targets: dict[str, float] = field(
        default_factory=lambda: (
            {
                key: TARGETS[key]
                for key in ("lateral_deviation", "depth_overshoot", "final_depth_error", "entry_error")
            }
            | _COMMON_TARGETS
        )
    )

    def load(self, path: Path) -> Any:
        return load_task(path)

    def plan(self, task: Any, params: Any, dt: float) -> Any:
        return plan_incision(task, params, dt)

    def fixtures(self, task: Any, params: Any) -> Any:
        return task_fixtures(task, params)

    def simulate(self, task: Any, params: Any, **options: Any) -> Any:
        return run_task(task, params, **options)

    def document(self, result: Any, base: dict[str, Any]) -> dict[str, Any]:
        incision = result.metrics.incision
        document = {
            "incision": {
                "entry": result.task.entry.tolist(),
                "direction": result.task.direction.tolist(),
                "depth": result.task.depth,
                "start_time": incision.feed_start_time,
                "end_time": incision.feed_end_time,
            },
            **base,
        }
        if result.faults:
            faults = [fault.as_dict() for fault in result.faults]
            document["fault"], document["faults"] = faults[0], faults
        if result.breakthrough is not None:
            document["breakthrough"] = result.breakthrough.as_dict()
        document["metrics"]["unsafe"] = result.unsafe  # why the robot did not end safe (empty: it did)
        return document


@dataclass(frozen=True)
class LineProcedure:
    """The report's straight line of tool0 with the whole arm (no tool process)."""

    name: str = "line"
    tool: str = "drill"
    phases: tuple[str, ...] = ("start", "line", "end")
    options: frozenset[str] = frozenset()
    summary_rows: tuple[SummaryRow, ...] = (
        SummaryRow("distance from the line", "line_deviation", 1e6, "um"),
        SummaryRow("final position error", "line_final_error", 1e6, "um"),
    )
    panels: tuple[str, ...] = ("along_line", "line_deviation")
    targets: dict[str, float] = field(
        default_factory=lambda: {"line_deviation": TARGETS["line_deviation"]} | _COMMON_TARGETS
    )

    def load(self, path: Path) -> Any:
        return load_task(path)

    def plan(self, task: Any, params: Any, dt: float) -> Any:
        return plan_line_task(task, params, dt)

    def fixtures(self, task: Any, params: Any) -> Any:
        return task_fixtures(task, params)

    def simulate(self, task: Any, params: Any, **options: Any) -> Any:
        return run_task(task, params, **options)

    def document(self, result: Any, base: dict[str, Any]) -> dict[str, Any]:
        return base


register(DrillingProcedure())
register(LineProcedure())
