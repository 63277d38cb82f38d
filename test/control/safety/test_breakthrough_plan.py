"""The breakthrough detector must see the breakthrough a plan relies on, or the plan is refused
saying why (issue 19 item 6, safety.breakthrough_plan).

Before: `--depth 0.0259 --feed-rate 0.003` ended 0.9 mm past the far cortex undetected (the feed
decelerated before the detector fired), and the detector was silently off for a bone ending in
soft bone, a far cortex under the cortical factor, one too thin or a feed too slow for its 10 N
minimum, and a second cortex behind a gap (it armed on the bone's last layer only). Refusals come
from run_task before the simulation starts, through the planner's goal checks (planning.drill_hole,
as a DrillHole goal's); detection is checked on the monitor with the thrust
profile written out here (bone_profiles) and in one closed-loop run.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from bone_profiles import engaged_thrust

from quirobot_control.models.bone import BoneLayer
from quirobot_control.planning.drill_hole import LIMIT, GoalRejectedError
from quirobot_control.planning.tasks import load_task
from quirobot_control.safety.breakthrough_plan import cortices, target_cortex
from quirobot_control.safety.drilling_monitor import DrillingMonitor, DrillingMonitorSettings, DrillingStop
from quirobot_control.simulation.faults import BREAKTHROUGH_LIMIT
from quirobot_control.simulation.incision import run_task

DT = 0.001  # s
GAP = BoneLayer("interosseous_gap", 0.01, 0.0)  # soft tissue between tibia and fibula
FIBULA = BoneLayer("fibula_cortex", 0.003, 1.0)


@pytest.fixture(scope="module")
def incision():
    return load_task("incision")


def with_layers(task, layers, **changes):
    return replace(task, bone=replace(task.bone, layers=tuple(layers)), **changes)


@pytest.mark.parametrize(
    ("case", "message"),
    [
        # A feed decelerating before the detector fires would leave the tip more than the 0.5 mm
        # allowance past the far cortex: the goal's depth rule refuses such a plan first (issue 31:
        # the same rule as a DrillHole goal's).
        ("decelerating", "depth 25.9 mm is 0.9 mm past the bone model's far side at 25 mm"),
        ("ends_in_the_canal", r"no far cortex ends it \(last layer medullary_canal: thrust factor 0.15"),
        (
            "far_cortex_under_the_cortical_factor",
            r"no far cortex ends it \(last layer far_cortex: thrust factor 0.40",
        ),
        ("thin_far_cortex", r"far cortex far_cortex \(0.20 mm\) gives the breakthrough detector a peak of"),
        ("slow_feed", r"a peak of 7.5 N at 0.10 mm/s, under its minimum 10.0 N"),
        ("fibula_behind_a_thin_gap", "cortex far_cortex ends at 25.00 mm, within the breakthrough"),
    ],
)
def test_a_plan_the_detector_would_not_see_through_is_refused_naming_why(parameters, incision, case, message):
    near, canal, far = incision.bone.layers
    task = {
        "decelerating": replace(incision, depth=0.0259, feed_rate=0.003),
        "ends_in_the_canal": with_layers(incision, [near, canal], depth=0.0214),
        "far_cortex_under_the_cortical_factor": with_layers(
            incision, [near, canal, replace(far, thrust_factor=0.4)], depth=0.0254
        ),
        "thin_far_cortex": with_layers(incision, [near, canal, replace(far, thickness=0.0002)], depth=0.0215),
        "slow_feed": replace(incision, feed_rate=0.0001),
        "fibula_behind_a_thin_gap": with_layers(
            incision, [near, canal, far, replace(GAP, thickness=0.0015), FIBULA], depth=0.0295
        ),
    }[case]
    with pytest.raises(GoalRejectedError, match=message) as refused:
        run_task(task, parameters, plant="ideal")
    assert refused.value.kind == LIMIT


def test_the_cli_refuses_the_decelerating_plan_in_one_line(tmp_path, capsys):
    from quirobot_cli.cli import main

    code = main(
        ["simulate", "--depth", "0.0259", "--feed-rate", "0.003", "--no-progress", "--output", str(tmp_path)]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "depth 25.9 mm is 0.9 mm past the bone model's far side" in err


def test_the_target_is_the_far_cortex_the_plan_drills_into(incision):
    near, canal, far = incision.bone.layers
    fibula = replace(incision.bone, layers=(near, canal, far, GAP, FIBULA))
    assert [c.names for c in cortices(fibula)] == [("near_cortex",), ("far_cortex",), ("fibula_cortex",)]
    assert target_cortex(fibula, 0.0252).exit == pytest.approx(0.025)  # the tibia's, not the fibula's
    assert target_cortex(fibula, 0.037).exit == pytest.approx(0.038)  # through both: the fibula's
    assert target_cortex(fibula, 0.003) is None  # in the near cortex: nothing to break through
    soft_end = replace(incision.bone, layers=(near, canal, far, BoneLayer("periosteum", 0.0005, 0.1)))
    assert target_cortex(soft_end, 0.0262).exit == pytest.approx(0.025)
    split = (near, canal, replace(far, thickness=0.002), replace(far, name="b"))
    porous = replace(incision.bone, layers=split)
    assert target_cortex(porous, 0.0252).names == ("far_cortex", "b")  # one cortex of two layers


@pytest.mark.parametrize("behind", ["soft_layer", "fibula"])
def test_detection_works_where_it_was_silently_off(parameters, incision, behind):
    """Armed on the plan's far cortex, the monitor fires on the far cortex' exit at a constant feed
    (before: a soft last layer disarmed it, a fibula behind armed it on the fibula)."""
    near, canal, far = incision.bone.layers
    extra = [BoneLayer("periosteum", 0.0005, 0.1)] if behind == "soft_layer" else [GAP, FIBULA]
    bone = replace(incision.bone, layers=(near, canal, far, *extra))
    target = target_cortex(bone, 0.0262)
    settings = DrillingMonitorSettings.from_parameters(
        parameters.drilling.safety,
        parameters.drill,
        parameters.drilling.spindle,
        30.0,
        target.start,
        exit_depth=target.exit,
    )
    monitor = DrillingMonitor(settings)
    rate = incision.feed_rate
    depths = np.arange(0.0, 0.0262, rate * DT)
    event = None
    for k, (depth, force) in enumerate(zip(depths, engaged_thrust(depths, bone, rate), strict=True)):
        event = event or monitor.update(
            k * DT,
            DT,
            depth=depth,
            effort=force + settings.feed_damping * rate,
            velocity=rate,
            commanded_velocity=rate,
            commanded_acceleration=0.0,
            spindle_at_speed=True,
            spindle_stalled=False,
        )
    assert event is not None and event.kind is DrillingStop.BREAKTHROUGH
    assert 0.025 < event.depth < 0.025 + BREAKTHROUGH_LIMIT


THIN_TIBIA = (
    BoneLayer("near_cortex", 0.001, 1.0),
    BoneLayer("medullary_canal", 0.003, 0.15),
    BoneLayer("far_cortex", 0.0015, 1.0),
)


def test_a_fibula_behind_the_tibia_no_longer_hides_the_tibias_breakthrough(parameters, incision):
    """Closed loop (ideal plant), a thin tibia with a fibula 10 mm behind it, drilled 1 mm past the
    tibia's far cortex: the feed stops within the limit past it (before: armed on the fibula, the
    bit went the whole millimetre on)."""
    task = with_layers(incision, [*THIN_TIBIA, GAP, FIBULA], depth=0.0065, feed_rate=0.002)
    result = run_task(task, parameters, plant="ideal", until="retract")
    assert result.metrics.incision.feed_end == "breakthrough"
    assert result.breakthrough.exit_depth == pytest.approx(0.0055)
    assert 0.0 < result.breakthrough.overshoot <= BREAKTHROUGH_LIMIT
    assert result.unsafe == []
