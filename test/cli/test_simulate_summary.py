"""`quirobot simulate`'s printed summary: verdicts only where the user can act on them.

Timing (real-time factor, controller p99) measures the machine the run happened on: a first run
on a loaded laptop must not print "MISSED" beside it (issue 19 item 17). The far-cortex line says
"detected", "no breakthrough to detect" (the plan stopped the tip before the thrust could drop)
or "NOT DETECTED". The summary is printed from a run's metrics, given here as data.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from quirobot_cli.simulation_commands import _print_summary, breakthrough_line
from quirobot_control.simulation.faults import BreakthroughReport
from quirobot_control.simulation.incision import TIMING_TARGETS, targets_met
from quirobot_control.simulation.metrics import IncisionMetrics, RunMetrics, TaskMetrics

EXIT = 0.025  # m, the shipped bone's far cortex exit
DETECTABLE = 0.25 * 0.96e-3  # m: breakthrough_drop x the shipped drill's point length


def _metrics(lateral_deviation: float = 39e-6) -> TaskMetrics:
    run = RunMetrics(
        completed=True,
        stop_reason=None,
        duration=28.37,
        wall_time=60.0,
        real_time_factor=0.47,  # a slow machine
        controller_p99=750e-6,  # over the 200 us target
        peak_current={"gantry_x": 24.3},
        max_tracking_error={"gantry_x": 1e-6},
    )
    incision = IncisionMetrics(
        entry_error=0.9e-6,
        lateral_deviation=lateral_deviation,
        depth_overshoot=10e-6,
        final_depth_error=0.2e-6,
        max_depth=0.0252,
        peak_thrust=54.9,
        feed_start_time=10.0,
        feed_end_time=26.8,
        feed_end=None,
        drilling_stop=None,
        peak_feed_effort=55.0,
        peak_thrust_estimate=54.0,
    )
    return TaskMetrics(run, incision=incision)


def _summary(capsys, metrics: TaskMetrics, breakthrough: BreakthroughReport | None = None) -> str:
    result = SimpleNamespace(
        metrics=metrics,
        task=SimpleNamespace(path=Path("incision.yaml")),
        fault=None,
        faults=[],
        breakthrough=breakthrough,
        unsafe=[],
    )
    _print_summary(result, targets_met(metrics), Path("log.mcap"), Path("plot.png"), DETECTABLE)
    return capsys.readouterr().out


def test_timing_is_reported_without_a_verdict(capsys):
    out = _summary(capsys, _metrics())
    timing = [line for line in out.splitlines() if "this machine" in line]
    assert len(timing) == len(TIMING_TARGETS) == 2
    assert "0.470 x" in out and "750.000 us" in out
    assert not any("MISSED" in line or line.rstrip().endswith("ok") for line in timing)
    assert "MISSED" not in out


def test_a_precision_miss_still_says_missed(capsys):
    out = _summary(capsys, _metrics(lateral_deviation=150e-6))
    (line,) = [line for line in out.splitlines() if "lateral deviation" in line]
    assert line.rstrip().endswith("MISSED")
    assert out.count("MISSED") == 1


@pytest.mark.parametrize(
    ("detected", "overshoot", "expected", "absent"),
    [
        (None, 0.21e-3, "no breakthrough to detect", "NOT DETECTED"),
        (None, 0.9e-3, "breakthrough NOT DETECTED", "no breakthrough"),
        (EXIT + 0.3e-3, 0.4e-3, "breakthrough detected at 25.30 mm", "NOT DETECTED"),
    ],
)
def test_the_far_cortex_line_says_whether_there_was_anything_to_detect(detected, overshoot, expected, absent):
    line = breakthrough_line(BreakthroughReport(EXIT, detected, overshoot), DETECTABLE)
    assert expected in line and absent not in line
    assert "(not detected)" not in line
    assert line.startswith("far cortex exit at 25.00 mm")


def test_the_summary_prints_the_far_cortex_line(capsys):
    out = _summary(capsys, _metrics(), BreakthroughReport(EXIT, None, 0.21e-3))
    assert "tip 0.210 mm past it: no breakthrough to detect (the thrust drops enough 0.24 mm past" in out
