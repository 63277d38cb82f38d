"""`quirobot render`: a PNG drawn from the URDF, with the links' colours where the URDF puts them."""

from __future__ import annotations

import warnings

import matplotlib.image
import numpy as np
import pytest

from quirobot_cli.cli import main
from quirobot_description.render import link_placements, representative_pose
from quirobot_description.urdf import robot_description


def test_render_writes_a_png_showing_the_link_colours(tmp_path, parameters, capsys):
    path = tmp_path / "robot.png"
    assert main(["render", str(path), "--dpi", "60"]) == 0
    assert capsys.readouterr().out.strip() == str(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = matplotlib.image.imread(path)[..., :3]
    assert image.shape[0] > 200 and image.shape[1] > 400
    # the bridge's orange (x_carriage colour, shaded) must be visible somewhere
    orange = np.array(parameters.link("x_carriage").colour[:3])
    hue = orange / orange.sum()
    pixels = image.reshape(-1, 3)
    brightness = pixels.sum(axis=1, keepdims=True)
    close = np.all(np.abs(pixels / np.maximum(brightness, 1e-6) - hue) < 0.03, axis=1) & (
        brightness[:, 0] > 0.3
    )
    assert close.sum() > 100


def test_rendering_again_in_one_process_gives_the_same_picture(tmp_path):
    # matplotlib's autoscaling of a new 3D axes overflowed from the second figure of a process on
    # (NaN axis limits, "quirobot render: error" depending on test order)
    from quirobot_description.render import render_png

    text = robot_description("none")
    paths = [tmp_path / f"robot{i}.png" for i in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for path in paths:
            render_png(text, path, dpi=30)
    assert paths[0].read_bytes() == paths[2].read_bytes()


def test_render_refuses_a_non_png_name(tmp_path, capsys):
    assert main(["render", str(tmp_path / "robot.jpg")]) == 2
    assert "png" in capsys.readouterr().err


def test_placements_follow_the_joints(parameters):
    text = robot_description("drill")
    q = representative_pose(parameters.lower_limits, parameters.upper_limits)
    assert np.all(q >= parameters.lower_limits) and np.all(q <= parameters.upper_limits)
    placements = link_placements(text, q, feed=0.0)
    assert np.allclose(placements["x_carriage"][:3, 3], [q[0], 0, 0])
    assert np.allclose(placements["z_ram"][:3, 3], [q[0], q[1], -q[2]])
    assert np.allclose(placements["drill_tip"], placements["tool0"])


@pytest.mark.parametrize("q", [[0, 0, 0, 0], [0, 0, 0, 0, float("nan")]])
def test_bad_pose_is_refused(tmp_path, q):
    from quirobot_description.render import render_png

    with pytest.raises(ValueError, match="q must be 5 finite numbers"):
        render_png(robot_description("none"), tmp_path / "x.png", q=q)


def test_the_readme_picture_is_there():
    from pathlib import Path

    picture = Path(__file__).resolve().parents[2] / "docs" / "images" / "robot.png"
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # made by `quirobot render docs/images/robot.png`
    assert matplotlib.image.imread(picture).shape[1] >= 1000
