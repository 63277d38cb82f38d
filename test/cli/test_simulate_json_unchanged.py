"""`quirobot simulate --json` prints what it printed before the metrics became typed (issue 20).

The documents in data/simulate_json_before.json were printed by main (61f9f7a) when
`TaskResult.metrics` was a dict and the fault and breakthrough reports dicts. Today's CLI runs the
same arguments and must print the same keys, in the same order, at every level, with the same
values. The ideal plant's run is deterministic on one machine (bit for bit), not across CPUs: on
an AMD EPYC, whose MuJoCo and numpy take other SIMD paths than the machine that printed the file,
values differed from the 13th digit on, and a peak that an event a period earlier or later moves
by up to 0.02 % (wrist_pitch's peak current) or a noise-level one by 0.04 urad (wrist_yaw's
tracking error, 0.3 urad). So a float matches within 0.1 % or 1e-7 (SI: 0.1 um, 0.1 urad), far
below any precision the product claims; integers, text and booleans exactly. Only what measures
this machine is left out of the value comparison (wall time, real-time factor, controller p99
and their verdicts) and the log and plot paths, which name the test's folder.

"incision_shipped" was printed again when `quirobot simulate` moved to the robot's own path (the
DrillHole executor over the drive bridge, issue 31): the same keys, the new path's values (CSP
drives; depth overshoot 3.11 um, was 2.86; final depth error 0.51 um, was 0.05), and again when a
goal began to wait for the drive side to run its hole (issue 33: a calibration of another machine
refused before anything moves): the plan starts one control period later, which moved the peaks
by up to 0.4 % (gantry_y's current 19.883 A, was 19.958) and the depth overshoot to 2.93 um.

"incision_estop" was printed again when `--inject` moved onto the robot's path too (the CSP
drives' stop ramp keeping the torque offset, issue 31): the same keys, the new path's values (the
e-stop stopped the tip 39 ms after it, was 40; 31 um of tip travel after it, was 38).

"line" was printed again when the line's plan moved onto the robot's path too (the drive bridge,
executor_run.run_trajectory: the CSP drives' own loops instead of ClosedLoopSimulation's host
PIDs): the same keys; the tracking errors grew (wrist_yaw 8.5 urad, was 0.30; gantry_y 1.24 um,
was 0.70), the peak currents moved by up to 3.3 % (gantry_x 8.18 A, was 7.91), the distance from
the line stayed within 0.1 um (0.596 um).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

BEFORE = json.loads((Path(__file__).parent / "data" / "simulate_json_before.json").read_text())
#: Values that measure the machine the run happened on (or name its output folder).
MACHINE = {"wall_time", "real_time_factor", "controller_p99", "log", "plot"}
RELATIVE = 1e-3  # of a float value (another CPU's last digits and period-shifted peaks)
ABSOLUTE = 1e-7  # SI (m, rad, A, N): below any precision the product claims


def differences(before: object, now: object, where: str = "") -> list[str]:
    """Where `now` differs from `before`: keys (and their order), list lengths, types, values;
    values under MACHINE keys are not compared."""
    if isinstance(before, dict):
        if not isinstance(now, dict) or list(before) != list(now):
            shown = list(now) if isinstance(now, dict) else now
            return [f"{where or '/'}: keys {list(before)} before, {shown!r} now"]
        found = []
        for key in before:
            if key not in MACHINE:
                found += differences(before[key], now[key], f"{where}/{key}")
        return found
    if isinstance(before, list):
        if not isinstance(now, list) or len(before) != len(now):
            return [f"{where}: {before!r} before, {now!r} now"]
        return [
            item
            for k, (b, n) in enumerate(zip(before, now, strict=True))
            for item in differences(b, n, f"{where}/{k}")
        ]
    if type(before) is not type(now):
        return [f"{where}: {before!r} before, {now!r} now"]
    if isinstance(before, float):
        same = math.isclose(before, now, rel_tol=RELATIVE, abs_tol=ABSOLUTE)
    else:
        same = before == now
    return [] if same else [f"{where}: {before!r} before, {now!r} now"]


def test_the_comparison_can_fail():
    document = BEFORE["line"]["document"]
    changed = json.loads(json.dumps(document))
    changed["metrics"]["line_deviation"] += 2 * ABSOLUTE  # 0.2 um more: a real change
    reordered = {"log": document["log"], **{k: v for k, v in document.items() if k != "log"}}
    assert differences(document, document) == []
    assert differences(document, changed) == [
        f"/metrics/line_deviation: {document['metrics']['line_deviation']!r} before, "
        f"{changed['metrics']['line_deviation']!r} now"
    ]
    assert differences(document, reordered)[0].startswith("/: keys")
    changed["metrics"]["line_deviation"] = document["metrics"]["line_deviation"] * (1.0 + 1e-12)
    assert differences(document, changed) == []  # another CPU's last digits
    changed["metrics"]["wall_time"] = 0.0  # the machine's, never compared
    changed["metrics"]["line_deviation"] = document["metrics"]["line_deviation"]
    assert differences(document, changed) == []


@pytest.mark.parametrize(
    "case",
    [
        "line",  # 2.2 s of plant time
        "incision_estop",  # 6.5 s, the fault reports
        pytest.param("incision_shipped", marks=pytest.mark.slow),  # 28 s, the breakthrough report
    ],
)
def test_simulate_json_is_what_it_was(case, tmp_path, capsys):
    from quirobot_cli.cli import main

    before = BEFORE[case]
    code = main([*before["argv"], "--output", str(tmp_path)])
    now = json.loads(capsys.readouterr().out)
    assert code == 0
    assert differences(before["document"], now) == []
    assert Path(now["log"]).parent == tmp_path and Path(now["plot"]).parent == tmp_path
