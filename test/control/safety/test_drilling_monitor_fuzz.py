"""Property test (hypothesis) of the drilling monitor (issue 19 "Done when"): random streams of
measured values, including non-finite and absurd ones, against the invariants of
safety.drilling_monitor.

Each example builds a monitor armed on the shipped bone's far cortex and feeds it a stream of
cycles: effort, depth, velocities and acceleration from plausible ranges, with NaN, +-inf, huge
finite values, a zero or negative period and a stalled spindle mixed in. Invariants, every cycle:
- it never raises; the filtered thrust and the average stay finite;
- a non-finite input (or period <= 0) with no fault latched returns a NON_FINITE fault naming it;
- a fault, once latched, is kept and nothing new is returned; messages are one line;
- a breakthrough fires only armed (depth >= arm_depth, cruising) and is early exactly when its
  depth is more than the tolerance short of the imaged exit;
and after the stream, if no fault is latched, a thrust of twice the limit still trips the limit
within 20 filter times (a NaN can no longer disable it).
"""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quirobot_control.planning.tasks import load_task
from quirobot_control.safety.drilling_monitor import (
    CRUISING_ACCELERATION,
    DrillingMonitor,
    DrillingMonitorSettings,
    DrillingStop,
)
from quirobot_description.parameters import load_parameters

PARAMETERS = load_parameters()
BONE = load_task("incision").bone
DT = 0.001

ABSURD = st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1e308, 1e30])


def value(low: float, high: float) -> st.SearchStrategy[float]:
    """Mostly plausible, sometimes absurd or non-finite."""
    return st.one_of(st.floats(low, high), st.floats(low, high), st.floats(low, high), ABSURD)


CYCLE = st.fixed_dictionaries(
    {
        "dt": st.one_of(
            st.just(DT), st.just(DT), st.just(DT), st.sampled_from([0.0, -DT, 1e-7, 0.5, math.nan])
        ),
        "depth": value(-0.01, 0.03),
        "effort": value(-150.0, 150.0),
        "velocity": value(-0.01, 0.01),
        "commanded_velocity": st.one_of(st.just(0.0015), value(-0.01, 0.01)),
        "commanded_acceleration": st.one_of(st.just(0.0), value(-0.1, 0.1)),
        "spindle_at_speed": st.booleans(),
        "spindle_stalled": st.sampled_from([False, False, False, True]),
        "repeat": st.integers(1, 80),  # the same values for this many cycles
    }
)


def monitor() -> DrillingMonitor:
    start, exit_depth = BONE.far_cortex
    safety = PARAMETERS.drilling.safety
    return DrillingMonitor(
        DrillingMonitorSettings.from_parameters(
            safety, PARAMETERS.drill, PARAMETERS.drilling.spindle, 30.0, start, exit_depth=exit_depth
        )
    )


NUMBERS = ("dt", "depth", "effort", "velocity", "commanded_velocity", "commanded_acceleration")


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(stream=st.lists(CYCLE, min_size=1, max_size=12))
def test_no_stream_of_measurements_disables_the_monitor(stream):
    m = monitor()
    s = m.settings
    t = 0.0
    for cycle in stream:
        for _ in range(cycle["repeat"]):
            fault_before = m.fault
            inputs = {key: cycle[key] for key in NUMBERS if key != "dt"}
            event = m.update(
                t,
                cycle["dt"],
                **inputs,
                spindle_at_speed=cycle["spindle_at_speed"],
                spindle_stalled=cycle["spindle_stalled"],
            )
            t += DT
            assert math.isfinite(m.thrust) and math.isfinite(m.average)
            bad = [
                key for key in NUMBERS if not math.isfinite(cycle[key]) or (key == "dt" and cycle[key] <= 0)
            ]
            if fault_before is not None:
                assert event is None and m.fault is fault_before
                continue
            if bad:
                assert event is not None and event.kind is DrillingStop.NON_FINITE
                names = ["control period" if key == "dt" else key.replace("_", " ") for key in bad]
                assert any(name in event.message for name in names)
            if event is None:
                continue
            assert "\n" not in event.message and event in (m.event, m.fault)
            if event.kind in (DrillingStop.BREAKTHROUGH, DrillingStop.EARLY_BREAKTHROUGH):
                assert event.depth >= s.arm_depth
                assert cycle["commanded_velocity"] > 0.0
                assert abs(cycle["commanded_acceleration"]) < CRUISING_ACCELERATION
                early = event.depth < s.exit_depth - s.exit_tolerance
                assert (event.kind is DrillingStop.EARLY_BREAKTHROUGH) == early
    if m.fault is None:  # the thrust limit still works
        tripped = None
        for k in range(int(20 * s.filter_time / DT)):
            tripped = tripped or m.update(
                t + k * DT,
                DT,
                depth=0.001,
                effort=2.0 * s.thrust_limit,
                velocity=0.0,
                commanded_velocity=0.0,
                commanded_acceleration=0.0,
                spindle_at_speed=True,
                spindle_stalled=False,
            )
        assert tripped is not None and tripped.kind is DrillingStop.THRUST_LIMIT
