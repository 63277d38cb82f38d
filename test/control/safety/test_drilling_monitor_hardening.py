"""The drilling monitor against the second adversarial campaign (issue 19 items 3 and 7): a
non-finite feed effort, a porous band in the far cortex and a short thrust bump; and update's fast
check of its inputs, which must change nothing.

The monitor runs on quasi-static thrust profiles computed here from the bone's layers (the point's
engaged fraction per layer, as models.bone states it), at a constant feed rate.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from bone_profiles import engaged_thrust

from quirobot_control.models.bone import BoneLayer
from quirobot_control.planning.tasks import load_task
from quirobot_control.safety import drilling_monitor
from quirobot_control.safety.drilling_monitor import DrillingMonitor, DrillingMonitorSettings, DrillingStop

DT = 0.001  # s, the control period
FEED_RATE = 0.0015  # m/s, the shipped incision's


def settings(parameters, bone=None) -> DrillingMonitorSettings:
    """The monitor of an incision through `bone` (default the shipped one), armed on its far cortex."""
    bone = bone or load_task("incision").bone
    start, exit_depth = bone.far_cortex
    return DrillingMonitorSettings.from_parameters(
        parameters.drilling.safety,
        parameters.drill,
        parameters.drilling.spindle,
        30.0,
        start,
        exit_depth=exit_depth,
    )


def step(monitor, k, depth, effort, velocity=FEED_RATE):
    return monitor.update(
        k * DT,
        DT,
        depth=depth,
        effort=effort,
        velocity=velocity,
        commanded_velocity=velocity,
        commanded_acceleration=0.0,
        spindle_at_speed=True,
        spindle_stalled=False,
    )


def drill_through(monitor, bone, extra=None):
    """Feed through the bone at FEED_RATE; `extra(k) -> N` adds to the thrust. The first event."""
    depths = np.arange(0.0, bone.thickness + 2e-3, FEED_RATE * DT)
    thrust = engaged_thrust(depths, bone, FEED_RATE)
    damping = monitor.settings.feed_damping * FEED_RATE
    for k, (depth, force) in enumerate(zip(depths, thrust, strict=True)):
        event = step(monitor, k, depth, force + damping + (extra(k) if extra else 0.0))
        if event is not None:
            return event
    return None


# --- item 3: a non-finite feed effort -----------------------------------------------------------
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_effort_is_a_fault_naming_it_and_the_filters_stay_finite(parameters, bad):
    """Before: one NaN sample left the filters NaN for good (NaN > limit is false): neither the thrust
    limit nor the breakthrough detector could fire again."""
    monitor = DrillingMonitor(settings(parameters))
    for k in range(100):
        assert step(monitor, k, 0.001, 30.0) is None
    event = step(monitor, 100, 0.001, bad)
    assert event is not None and event.kind is DrillingStop.NON_FINITE and event.is_fault
    assert "effort" in event.message and str(bad) in event.message
    assert monitor.fault is event and not event.success
    assert math.isfinite(monitor.thrust) and math.isfinite(monitor.average)


@pytest.mark.parametrize(
    "name", ["depth", "velocity", "commanded_velocity", "commanded_acceleration", "dt", "time"]
)
def test_every_non_finite_input_is_a_fault_naming_it(parameters, name):
    monitor = DrillingMonitor(settings(parameters))
    values = dict(
        time=0.0,
        dt=DT,
        depth=0.001,
        effort=30.0,
        velocity=FEED_RATE,
        commanded_velocity=FEED_RATE,
        commanded_acceleration=0.0,
    )
    values[name] = math.nan
    time, dt = values.pop("time"), values.pop("dt")
    event = monitor.update(time, dt, **values, spindle_at_speed=True, spindle_stalled=False)
    assert event is not None and event.kind is DrillingStop.NON_FINITE
    assert ("control period" if name == "dt" else name.replace("_", " ")) in event.message
    assert math.isfinite(monitor.thrust)


def test_a_zero_period_is_a_fault(parameters):
    monitor = DrillingMonitor(settings(parameters))
    event = monitor.update(
        0.0,
        0.0,
        depth=0.0,
        effort=0.0,
        velocity=0.0,
        commanded_velocity=0.0,
        commanded_acceleration=0.0,
        spindle_at_speed=True,
        spindle_stalled=False,
    )
    assert event is not None and "control period 0.0" in event.message


def test_thrust_limit_only_monitor_faults_on_a_nan_effort_too(parameters):
    """The drive bridge's monitor (no drilling context): the same fault, which stops every drive."""
    s = DrillingMonitorSettings.thrust_limit_only(parameters.drilling.safety, parameters.drill, 30.0)
    monitor = DrillingMonitor(s)
    assert step(monitor, 0, 0.01, 10.0) is None
    event = step(monitor, 1, 0.01, math.nan)
    assert event is not None and event.is_fault and "effort nan" in event.message


# --- item 7: an early breakthrough is not a success ----------------------------------------------
def porous_far_cortex(parameters):
    """The shipped bone with a band of half the cortical thrust, 0.6 mm thick, 1.5 mm into its far
    cortex: the engaged thrust falls by 0.5 * 0.6 / 0.96 = 31 % there (more than the 25 % drop)."""
    bone = load_task("incision").bone
    near, canal, far = bone.layers
    layers = (
        near,
        canal,
        BoneLayer("far_cortex_outer", 0.0015, 1.0),
        BoneLayer("porous_band", 0.0006, 0.5),
        BoneLayer("far_cortex_inner", far.thickness - 0.0021, 1.0),
    )
    return bone, replace(bone, layers=layers)


def test_a_porous_band_in_the_far_cortex_is_an_early_breakthrough_not_a_success(parameters):
    imaged, actual = porous_far_cortex(parameters)
    monitor = DrillingMonitor(settings(parameters, imaged))
    event = drill_through(monitor, actual)
    exit_depth = imaged.far_cortex[1]
    tolerance = parameters.drilling.safety.breakthrough_exit_tolerance
    assert event is not None and event.kind is DrillingStop.EARLY_BREAKTHROUGH
    assert event.depth < exit_depth - tolerance  # the band, not the exit
    assert not event.success and not event.is_fault  # the feed stops; the task retracts, no success
    assert f"short of the imaged far cortex exit at {exit_depth * 1e3:.2f} mm" in event.message
    # The same bone as imaged: on time, a success.
    clean = DrillingMonitor(settings(parameters, imaged))
    on_time = drill_through(clean, imaged)
    assert on_time.kind is DrillingStop.BREAKTHROUGH and on_time.success
    assert exit_depth < on_time.depth < exit_depth + parameters.drilling.safety.breakthrough_arm_margin


@pytest.mark.parametrize("bump", [20.0, 38.0])
def test_a_30_ms_thrust_bump_in_the_far_cortex_is_not_a_breakthrough(parameters, bump):
    """A chip jam: +bump N for 30 ms in the middle of the far cortex. Before: its one-revolution
    average rose a third above the cortex' level, whose return fired the detector 2 mm early."""
    bone = load_task("incision").bone
    start, exit_depth = bone.far_cortex
    middle = int(round((start + 0.5 * (exit_depth - start)) / (FEED_RATE * DT)))
    monitor = DrillingMonitor(settings(parameters, bone))
    event = drill_through(monitor, bone, lambda k: bump if middle <= k < middle + 30 else 0.0)
    assert event is not None and event.kind is DrillingStop.BREAKTHROUGH, event
    assert exit_depth < event.depth < exit_depth + 0.5e-3


def test_a_thrust_just_above_the_limit_is_printed_above_it(parameters):
    """Before: `feed thrust 80.0 N above the limit 80.0 N` (rounded to the limit's decimals)."""
    s = settings(parameters)
    monitor = DrillingMonitor(replace(s, filter_time=1e-6))  # the estimate follows the sample at once
    effort = s.thrust_limit + 0.004 + s.feed_damping * FEED_RATE
    event = step(monitor, 0, 0.001, effort)
    assert event is not None and event.kind is DrillingStop.THRUST_LIMIT
    assert "feed thrust 80.004 N above the limit 80.0 N" in event.message


#: What a caller might send for one input: plain floats the fast check takes (zeros of either
#: sign, the smallest, a huge one), and what it must leave to the naming check: non-finite floats,
#: ints and a bool, numpy floats (NaN among them), strings (one float() reads), None.
ODD_INPUTS = [0.0, -0.0, -1e-3, 5e-324, 1e308, math.nan, math.inf, -math.inf, 0, 2, True]
ODD_INPUTS += [np.float64(0.002), np.float64(np.nan), np.float32(0.5), "0.001", "x", None]


def _outcomes(parameters, case: dict, base: dict) -> list[str]:
    """Two plain periods, `case`, one plain period: each period's event or error and the monitor's
    state after it, as text (a NaN equal to itself)."""
    monitor, outcomes = DrillingMonitor(settings(parameters)), []
    for k, inputs in enumerate((base, base, case, base)):
        inputs = inputs | {"time": inputs["time"] + k * DT} if k != 2 else inputs
        try:
            event = monitor.update(**inputs, spindle_at_speed=True, spindle_stalled=False)
        except Exception as error:  # noqa: BLE001 - compared as it is
            event = f"{type(error).__name__}: {error}"
        state = (monitor.thrust, monitor.average, monitor.depth, monitor.event, monitor.fault)
        outcomes.append(repr((event, state, list(monitor._window))))
    return outcomes


def test_the_fast_input_check_changes_nothing(parameters, monkeypatch):
    """update's fast check of its inputs (_finite_floats: every one a plain float, finite, the
    period > 0) passes only inputs the naming check (_non_finite) has nothing to say about, leaves
    every other to it, and the monitor does the same with it or without it on a table of every
    input replaced in turn (ODD_INPUTS, a period <= 0, finite inputs whose sum overflows)."""
    base = dict(time=0.5, dt=DT, effort=20.0, depth=0.004, velocity=FEED_RATE)
    base |= dict(commanded_velocity=FEED_RATE, commanded_acceleration=0.0)
    cases = [base, base | {"effort": 1e308, "depth": 1e308}, base | {"dt": -DT}]
    cases += [base | {name: value} for name in base for value in ODD_INPUTS]
    taken = 0
    for case in cases:
        fast = drilling_monitor._finite_floats(**case)
        values = list(case.values())
        plain = all(type(value) is float for value in values)
        assert fast == (plain and case["dt"] > 0.0 and math.isfinite(sum(values))), case
        assert not fast or drilling_monitor._non_finite(**case) is None, case
        taken += fast
    assert 10 < taken < len(cases) - 50  # both ways taken
    with_it = [_outcomes(parameters, case, base) for case in cases]
    monkeypatch.setattr(drilling_monitor, "_finite_floats", lambda *values: False)
    assert [_outcomes(parameters, case, base) for case in cases] == with_it
