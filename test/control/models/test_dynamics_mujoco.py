"""A second independent engine: MuJoCo's RNE and joint-space inertia on the exported URDF.

The drill_feed joint is held at 0 with zero velocity and acceleration, which for the other joints
is the same as locking it: their efforts and inertia block equal the 5-joint model's.
"""

from __future__ import annotations

import numpy as np
import pytest

from quirobot_control.models.dynamics import Dynamics
from quirobot_description.parameters import JOINT_NAMES

mujoco = pytest.importorskip("mujoco")

pytestmark = pytest.mark.engines


@pytest.fixture(scope="module")
def engine(exported_urdf, parameters):
    model = mujoco.MjModel.from_xml_path(str(exported_urdf))
    model.opt.gravity[:] = [0.0, 0.0, -parameters.gravity]  # URDF has no gravity; MuJoCo's default is 9.81
    data = mujoco.MjData(model)
    ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name) for name in JOINT_NAMES]
    assert min(ids) >= 0
    qpos = np.array([model.jnt_qposadr[i] for i in ids])
    dof = np.array([model.jnt_dofadr[i] for i in ids])
    return model, data, qpos, dof


def test_rne_and_inertia_equal_mujoco(engine, parameters):
    model, data, qpos_index, dof_index = engine
    dynamics = Dynamics(parameters)
    rng = np.random.default_rng(7)
    n = 100
    q = rng.uniform(parameters.lower_limits, parameters.upper_limits, (n, 5))
    qd = rng.uniform(-2, 2, (n, 5)) * parameters.velocity_limits
    qdd = rng.uniform(-2, 2, (n, 5)) * parameters.acceleration_limits
    ours_tau = dynamics.inverse_dynamics(q, qd, qdd, friction=False)
    ours_H = dynamics.mass_matrix(q)
    full = np.zeros((model.nv, model.nv))
    result = np.zeros(model.nv)
    for k in range(n):
        data.qpos[:] = 0.0
        data.qvel[:] = 0.0
        data.qacc[:] = 0.0
        data.qpos[qpos_index] = q[k]
        data.qvel[dof_index] = qd[k]
        data.qacc[dof_index] = qdd[k]
        mujoco.mj_forward(model, data)
        data.qacc[:] = 0.0
        data.qacc[dof_index] = qdd[k]
        mujoco.mj_rne(model, data, 1, result)
        np.testing.assert_allclose(
            result[dof_index], ours_tau[k], rtol=1e-9, atol=1e-9 * np.abs(ours_tau[k]).max()
        )
        mujoco.mj_fullM(model, data, full)  # MuJoCo >= 3.3 signature (model, data, dst)
        np.testing.assert_allclose(full[np.ix_(dof_index, dof_index)], ours_H[k], rtol=1e-9, atol=1e-12)
