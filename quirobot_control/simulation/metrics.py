"""Typed metrics of a closed-loop run (`simulation.incision.run_task`), with their units.

`TaskMetrics` is what `TaskResult.metrics` holds: the `RunMetrics` every task has, and the
`IncisionMetrics` or the `LineMetrics` of its kind. `TaskMetrics.as_dict()` is the one
serialisation: the flat {name: value} that `quirobot simulate --json` prints under "metrics"
(common names first, then the task's, in field order; tuples as lists; NaN kept, the CLI makes it
null). Lengths in m, angles in rad, times in s, forces in N, currents in A. Why frozen dataclasses
rather than the former dict: a misspelt name fails where it is written, and each number's unit is
written once, beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["IncisionMetrics", "LineMetrics", "RunMetrics", "TaskMetrics"]


def _flat(item: object) -> dict[str, object]:
    """{field: value} of a metrics dataclass, in field order; tuples as lists, dicts copied."""
    values: dict[str, object] = {}
    for f in fields(item):
        value = getattr(item, f.name)
        if isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, dict):
            value = dict(value)
        values[f.name] = value
    return values


@dataclass(frozen=True)
class RunMetrics:
    """What every run measures (both tasks)."""

    completed: bool  # the whole plan ran, no stop
    stop_reason: str | None  # the hardware's stop, None without one
    duration: float  # s of simulated time
    wall_time: float  # s of wall time (this machine)
    real_time_factor: float  # simulated s per wall s (this machine)
    controller_p99: float  # s: 99th percentile of the controller's cost per control cycle
    peak_current: dict[str, float]  # A, the largest |motor current| per joint
    max_tracking_error: dict[str, float]  # m (prismatic) or rad (revolute): |measured - reference|


@dataclass(frozen=True)
class IncisionMetrics:
    """An incision, from the plant's true drill tip (simulation.incision's docstring); NaN where
    it does not apply (nothing drilled; final_depth_error after a breakthrough)."""

    entry_error: float  # m, planned entry to where the tip crossed the bone surface
    lateral_deviation: float  # m, largest distance from the drilling axis while in bone
    depth_overshoot: float  # m, largest depth past the target over the whole run (>= 0)
    final_depth_error: float  # m, |depth - target| at the end of the dwell
    max_depth: float  # m, deepest tip depth below the entry over the whole run
    peak_thrust: float  # N, the bone's largest thrust on the bit
    feed_start_time: float  # s, the planned feed phase's start
    feed_end_time: float  # s, its end
    feed_end: str | None  # the drilling event that ended the feed (DrillingStop's value), if any
    drilling_stop: str | None  # that event's message
    peak_feed_effort: float  # N, the feed drive's largest |effort|
    peak_thrust_estimate: float | None  # N, the monitor's largest thrust estimate (None: no monitor)


@dataclass(frozen=True)
class LineMetrics:
    """The report's straight line, from tool0."""

    line_deviation: float  # m, largest distance of tool0 from the planned line while on it
    line_final_error: float  # m, |tool0 - the line's end| at the end of the run
    line_start: tuple[float, float, float]  # m, world frame
    line_end: tuple[float, float, float]  # m, world frame
    line_start_time: float  # s, the line phase's start
    line_end_time: float  # s, its end


@dataclass(frozen=True)
class TaskMetrics:
    """A run's metrics: `run`, and `incision` or `line` by the task's kind."""

    run: RunMetrics
    incision: IncisionMetrics | None = None
    line: LineMetrics | None = None
    #: Another procedure's metrics (a frozen dataclass of its own, procedures.procedure): its
    #: fields follow the run's in as_dict(), so a new procedure adds no field here.
    procedure: object | None = None

    def as_dict(self) -> dict[str, object]:
        """The flat {name: value} `quirobot simulate --json` prints (module docstring)."""
        values = _flat(self.run)
        for part in (self.incision, self.line, self.procedure):
            if part is not None:
                values.update(_flat(part))
        return values
