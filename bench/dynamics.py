"""Benchmark: our RNEA / CRBA / forward dynamics against pinocchio, measured in the same run.

Prints ratios (ours / pinocchio) per state, single calls and one batched call over many states,
never absolute times as a pass/fail criterion. Run: python bench/dynamics.py [--states N] [--save [FILE]]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np
import pinocchio as pin
from bench_results import add_save_option, saved_output

from quirobot_control.models.dynamics import Dynamics
from quirobot_description.export import export_urdf
from quirobot_description.parameters import JOINT_NAMES, load_parameters


def per_call(function, repeats: int) -> float:
    """Best-of-3 mean seconds per call."""
    best = np.inf
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(repeats):
            function()
        best = min(best, (time.perf_counter() - start) / repeats)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--states", type=int, default=10000, help="states in the batched call (default 10000)"
    )
    add_save_option(parser, "dynamics.txt")
    args = parser.parse_args()
    with saved_output(args.save):
        _run(args)


def _run(args: argparse.Namespace) -> None:
    params = load_parameters()
    with tempfile.TemporaryDirectory() as directory:
        full = pin.buildModelFromUrdf(str(export_urdf(directory, tool="drill")))
    model = pin.buildReducedModel(full, [full.getJointId("drill_feed")], pin.neutral(full))
    model.gravity.linear = np.array([0.0, 0.0, -params.gravity])
    data = model.createData()
    index = np.array([model.joints[model.getJointId(name)].idx_q for name in JOINT_NAMES])
    dynamics = Dynamics(params)

    rng = np.random.default_rng(0)
    n = args.states
    q = rng.uniform(params.lower_limits, params.upper_limits, (n, 5))
    qd = rng.uniform(-1, 1, (n, 5)) * params.velocity_limits
    qdd = rng.uniform(-1, 1, (n, 5)) * params.acceleration_limits
    qp, qdp, qddp = (np.empty_like(x) for x in (q, qd, qdd))
    for ours, theirs in ((q, qp), (qd, qdp), (qdd, qddp)):
        theirs[:, index] = ours

    rows = []
    single = 200
    rows.append(
        (
            "RNEA, one state per call",
            per_call(lambda: dynamics.inverse_dynamics(q[0], qd[0], qdd[0], friction=False), single),
            per_call(lambda: pin.rnea(model, data, qp[0], qdp[0], qddp[0]), single),
        )
    )
    rows.append(
        (
            "CRBA, one state per call",
            per_call(lambda: dynamics.mass_matrix(q[0]), single),
            per_call(lambda: pin.crba(model, data, qp[0]), single),
        )
    )
    rows.append(
        (
            "forward dynamics, one state per call",
            per_call(lambda: dynamics.forward_dynamics(q[0], qd[0], qdd[0], friction=False), single),
            per_call(lambda: pin.aba(model, data, qp[0], qdp[0], qddp[0]), single),
        )
    )

    def pin_loop():
        for k in range(n):
            pin.rnea(model, data, qp[k], qdp[k], qddp[k])

    rows.append(
        (
            f"RNEA, batch of {n} (per state; pinocchio loops in Python)",
            per_call(lambda: dynamics.inverse_dynamics(q, qd, qdd, friction=False), 1) / n,
            per_call(pin_loop, 1) / n,
        )
    )
    print(f"{'':62s} {'ours/pinocchio':>14s}")
    for label, ours, theirs in rows:
        print(f"{label:62s} {ours / theirs:14.1f}")


if __name__ == "__main__":
    main()
