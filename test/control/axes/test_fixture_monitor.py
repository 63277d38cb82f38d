"""The per-cycle virtual fixture check (axes.fixture_monitor): the compiled zone test against its
Python twin, bit for bit, over poses that graze, enter and miss tilted boxes, with the stopping
pose deciding; the cycles it leaves to the twin (a capsule, a calibrated chain, a non-finite or
non-float value); and the monitor's answers, compiled or not, along the shipped incision with a
zone across its path.

That the twin is the law the hardware component enforced before it was compiled: the braking
ahead and the zone stops of test_fixture_braking.py and test_hardware_stops.py, and the
simulate outputs of test_simulate_json_unchanged.py.
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
from compiled_kernel import bits, require_compiled

from quirobot_control.axes import fixture_monitor
from quirobot_control.axes.fixture_monitor import FixtureMonitor, box_constants, zone_hit_in_python
from quirobot_control.axes.virtual_fixtures import NoGoZone, ToolGeometry, tool_points_one
from quirobot_control.planning.tasks import load_task, plan_incision, task_fixtures
from quirobot_description.geometric_errors import GeometricErrors

DT = 0.001  # s: the control period


def _compiled():
    require_compiled(fixture_monitor.COMPILED, "_fixture_kernel")
    return fixture_monitor.zone_hit


@pytest.fixture(scope="module")
def tool(parameters):
    return ToolGeometry.from_parameters(parameters)


def _stopping_pose(tool, commanded, velocity, dt) -> list[float]:
    """axes.limits.stopping_position of each axis (the twin's own law, written out)."""
    axes = zip(commanded, velocity, tool.stop_deceleration, strict=True)
    return [q + v * dt + v * abs(v) / (2 * a) for q, v, a in axes]


def _zones(rng, tool_point) -> tuple[NoGoZone, ...]:
    """Two tilted boxes with a face a few mm from `tool_point` (3,), m: a pose near it grazes them."""
    zones = []
    for name in ("table", "limb_support"):
        size = rng.uniform(0.02, 0.4, 3)
        rpy = rng.uniform(-0.5, 0.5, 3)
        offset = rng.normal(size=3)
        offset *= (0.5 * np.linalg.norm(size) + rng.uniform(-0.005, 0.02)) / np.linalg.norm(offset)
        zones.append(NoGoZone.box(name, tool_point + offset, size, rpy))
    return tuple(zones)


def test_the_compiled_zone_check_is_the_python_twin_bit_for_bit(tool):
    kernel = _compiled()
    rng = np.random.default_rng(36)
    model = tool.model
    seen = {"commanded": 0, "measured": 0, "stopping": 0, "clear": 0, "still": 0}
    for _ in range(3000):
        q5 = rng.uniform(model.lower, model.upper)
        commanded = [*q5.tolist(), float(rng.uniform(model.feed_lower, model.feed_upper))]
        measured = (np.array(commanded) + rng.normal(scale=rng.choice([1e-6, 0.02]), size=6)).tolist()
        velocity = rng.normal(scale=rng.choice([1e-3, 0.3, 1.0]), size=6)
        velocity[rng.random(6) < 0.2] = 0.0
        if rng.random() < 0.1:
            velocity[:] = 0.0  # at rest: no stopping pose to test
        dt = float(rng.choice([0.001, 0.01]))
        stop = _stopping_pose(tool, commanded, velocity, dt)
        near = (commanded, measured, stop)[int(rng.integers(3))]  # the pose the zones graze
        zones = _zones(rng, np.asarray(tool_points_one(near, tool)[int(rng.integers(3))][1]))
        python = zone_hit_in_python(tool, zones, commanded, measured, dt, velocity.tolist())
        compiled = kernel(*box_constants(tool, zones), commanded, measured, dt, velocity.tolist())
        assert compiled is not None, "a finite cycle on box zones must be the compiled one's"
        assert bits(compiled[0]) == bits(python[0])  # the commanded tip
        assert compiled[1] == python[1], (commanded, measured, velocity.tolist(), dt)
        if python[1] is not None:
            seen[fixture_monitor.LABELS[python[1][0]]] += 1
        else:
            seen["still" if not velocity.any() else "clear"] += 1
    # Every branch was taken, and often: the zones sit where the tool grazes them.
    assert min(seen.values()) >= 50, seen


def test_the_compiled_zone_check_agrees_at_the_last_bit_of_a_zone_face(tool):
    """Where a zone's centre moves by one unit in the last place and the answer flips (the face
    crosses a tool point or edge), the compiled check flips there too: a pose, a stopping pose or a
    segment end rounded otherwise than the Python's would move the flip."""
    kernel = _compiled()
    rng = np.random.default_rng(37)
    model = tool.model
    flips = {"commanded": 0, "measured": 0, "stopping": 0}
    for case in range(300):
        q5 = rng.uniform(model.lower, model.upper)
        commanded = [*q5.tolist(), float(rng.uniform(model.feed_lower, model.feed_upper))]
        # Poses apart (decimetres), so the zone sliding off one of them touches no other.
        measured = (np.array(commanded) + rng.normal(scale=0.1, size=6)).tolist()
        velocity = rng.normal(scale=2.0, size=6).tolist()
        size, rpy, axis = rng.uniform(0.01, 0.1, 3), rng.uniform(-0.5, 0.5, 3), int(rng.integers(3))
        family = case % 5
        if family == 3:  # creeping: the stopping pose within STILL of the pose is not tested
            velocity = rng.normal(scale=1e-7, size=6).tolist()
        elif family == 4:  # the tool a hair off vertical across an upright box's side face
            commanded[4] = float(np.pi / 2 - rng.uniform(1e-11, 1e-9))
            rpy, axis = np.zeros(3), int(rng.integers(2))
        dt = 0.001
        stop = _stopping_pose(tool, commanded, velocity, dt)
        near = (commanded, measured, stop, stop, commanded)[family]
        point = np.asarray(tool_points_one(near, tool)[int(rng.integers(3))][int(rng.integers(1, 3))])

        cycle = (commanded, measured, dt, velocity)

        def answer(centre_k, size=size, rpy=rpy, axis=axis, point=point, cycle=cycle):
            centre = point.copy()
            centre[axis] = centre_k
            zones = (NoGoZone.box("table", centre, size, rpy),)
            return zone_hit_in_python(tool, zones, *cycle), kernel(*box_constants(tool, zones), *cycle)

        # The zone slides along a world axis from covering the point to clear of it: bisect the
        # centre's coordinate down to two neighbouring doubles with different answers.
        inside, outside = float(point[axis]), float(point[axis]) + 0.2
        if answer(inside)[0][1] == answer(outside)[0][1]:
            continue
        while np.nextafter(inside, outside) != outside:
            middle = 0.5 * (inside + outside)
            if answer(middle)[0][1] == answer(inside)[0][1]:
                inside = middle
            else:
                outside = middle
        for centre_k in (inside, outside):
            python, compiled = answer(centre_k)
            assert compiled[1] == python[1], (case, centre_k)
        hit = answer(inside)[0][1] or answer(outside)[0][1]
        flips[fixture_monitor.LABELS[hit[0]]] += 1
    assert min(flips.values()) >= 30, flips


def test_the_compiled_check_leaves_other_cycles_to_the_twin(parameters, tool):
    kernel = _compiled()
    zones = (NoGoZone.box("table", [1.0, 1.0, -1.55], [2.0, 2.0, 0.2]),)
    constants = box_constants(tool, zones)
    q = [0.5, 0.5, 0.3, 1.5, 0.5, 0.004]
    still = [0.0] * 6
    assert kernel(*constants, q, q, 0.001, still) is not None
    for bad in (float("nan"), float("inf"), 1):  # non-finite, or not a float
        for k in range(6):
            moved = list(q)
            moved[k] = bad
            assert kernel(*constants, moved, q, 0.001, still) is None
            assert kernel(*constants, q, moved, 0.001, still) is None
            assert kernel(*constants, q, q, 0.001, moved) is None
    assert kernel(*constants, tuple(q), q, 0.001, still) is None  # a tuple: not the list it takes
    assert kernel(*constants, q[:5], q, 0.001, still) is None
    assert kernel(*constants, q, q, float("nan"), still) is None
    assert kernel(*constants, q, q, 0.001, [1e200] * 6) is None  # the stopping pose overflows
    with pytest.raises(TypeError, match="15 floats per box"):
        kernel(constants[0], constants[1][:-1], q, q, 0.001, still)
    # Only the Python twin knows capsules and the calibrated chain.
    capsule = NoGoZone.capsule("nerve", [0.0, 0.0, -1.0], [0.1, 0.0, -1.0], 0.01)
    assert box_constants(tool, (*zones, capsule)) is None
    calibrated = ToolGeometry.from_parameters(parameters, GeometricErrors(l5_error=1e-4))
    assert box_constants(calibrated, zones) is None


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
def test_the_monitor_stops_the_incision_at_a_zone_across_its_path(parameters, tool, compiled):
    """The shipped incision's plan against its own fixtures plus a box around its entry point: the
    first sample that stops is the same, compiled or not, and it is the stopping pose that stops
    it (braking ahead), before the commanded tool reaches the box."""
    if compiled:
        _compiled()
    task = load_task("incision")
    plan = plan_incision(task, parameters, DT)
    fixtures = task_fixtures(task, parameters)
    guard = NoGoZone.box("drape", task.entry - 0.03 * task.direction, [0.02, 0.02, 0.02])
    monitor = FixtureMonitor(replace(fixtures, zones=(*fixtures.zones, guard)))
    if not compiled:
        monitor._compiled = None
    assert (monitor._compiled is not None) == compiled
    dt = DT
    reasons = []
    for q, v in zip(plan.positions, plan.velocities, strict=True):
        reason = monitor.check(q.tolist(), q.tolist(), dt, v.tolist())
        reasons.append(reason)
        if reason is not None:
            break
    first = len(reasons) - 1
    assert re.fullmatch(
        "virtual fixture: the commanded (drill tip|drill bit|tool body), stopping from its speed at the "
        "quick-stop decelerations, would enter no-go zone 'drape': braking ahead of it",
        reasons[-1],
    ), reasons[-1]
    assert 0 < first < len(plan.positions) - 1
    # Quick-stopped there, the tool halts short of the box.
    monitor_at_rest = FixtureMonitor(replace(fixtures, zones=(guard,)))
    q = plan.positions[first].tolist()
    assert monitor_at_rest.check(q, q, dt, [0.0] * 6) is None


def test_the_monitor_answers_the_same_compiled_or_not_with_the_speed_limit(parameters):
    """Cycle by cycle along the incision, a jittered measured pose and a doubled command speed near
    the entry: the same reasons (zones and tip speed) from the compiled monitor as from the twin."""
    _compiled()
    task = load_task("incision")
    plan = plan_incision(task, parameters, DT)
    fixtures = task_fixtures(task, parameters)
    rng = np.random.default_rng(5)
    guard = NoGoZone.box("drape", task.entry + 0.004 * task.direction, [0.01, 0.01, 0.004], [0.1, 0.2, 0.3])
    monitors = [FixtureMonitor(replace(fixtures, zones=(*fixtures.zones, guard))) for _ in range(2)]
    monitors[1]._compiled = None
    dt = DT
    answers = [[], []]
    positions = plan.positions
    for k in range(0, len(positions), 3):  # every third sample: twice the tip's speed and more
        q, v = positions[k].tolist(), (3.0 * plan.velocities[k]).tolist()
        measured = (positions[k] + rng.normal(scale=2e-4, size=6)).tolist()
        for monitor, answer in zip(monitors, answers, strict=True):
            answer.append(monitor.check(q, measured, dt, v))
    assert answers[0] == answers[1]
    kinds = {_kind(reason) for reason in answers[0] if reason is not None}
    assert {"commanded", "measured", "stopping", "speed"} <= kinds, kinds


def _kind(reason: str) -> str:
    """Which check stopped: a pose in a zone (commanded, measured, stopping) or the tip speed."""
    if "tip speed" in reason:
        return "speed"
    if "stopping from its speed" in reason:
        return "stopping"
    return reason.split(" ")[3]
