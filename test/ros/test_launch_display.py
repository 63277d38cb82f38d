"""launch_testing: display.launch.py with RViz2 under Xvfb shows the robot.

robot_state_publisher publishes the QUIROBOT URDF and its transforms, joint_state_publisher
(gui:=false) the joint states, and RViz2 (software OpenGL on a virtual X screen) draws it: a
screenshot shows the x and y carriages in their URDF colours in the 3D view (not an empty view),
and the Displays panel, read back by OCR (tesseract), says "Status: Ok" for Global, RobotModel
and TF with no error or warning. The screenshot is kept in $QUIROBOT_ARTIFACTS (CI artifact;
docs/images/rviz.png in the README is one).

Needs ROS 2 with rviz2 (../shared/ros2/install.sh --rviz), Xvfb, ImageMagick's `import` and
tesseract; skipped where they are absent.
"""

# ruff: noqa: E402, I001  (imports follow the skip; ROS's `launch` is not first-party)
from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import time
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("launch_testing")
pytest.importorskip("rclpy")
for tool in ("Xvfb", "import", "tesseract"):
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed", allow_module_level=True)

import launch_testing.actions
import launch_testing.asserts
import rclpy
from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import IncludeLaunchDescription, SetEnvironmentVariable
from launch.launch_description_sources import PythonLaunchDescriptionSource
from PIL import Image
from rclpy.qos import DurabilityPolicy, QoSProfile
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from quirobot_description.parameters import load_parameters

#: The virtual X display: one per ROS domain, so parallel runs on one machine do not meet.
DISPLAY = f":{90 + int(os.environ.get('ROS_DOMAIN_ID', '0')) % 100}"
SCREEN = (1280, 960)
TIMEOUT = 120.0  # s: RViz2 with software OpenGL on a loaded 2-core machine
ARTIFACTS = Path(os.environ.get("QUIROBOT_ARTIFACTS", "/tmp"))
#: The 3D view and the Displays panel in the screenshot (x, y, width, height), px, as laid out by
#: rviz/quirobot.rviz on a 1280 x 960 screen.
VIEW = (460, 62, 818, 806)
PANEL = (0, 60, 440, 380)
#: Pixels of its URDF colour each carriage covers at least in the view (seen: x about 6200, y about
#: 260 behind the ram; an empty view or the TF axes alone: 0).
MIN_PIXELS = 100


@pytest.mark.launch_test
def generate_test_description():
    display = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(f"{get_package_share_directory('quirobot')}/launch/display.launch.py"),
        launch_arguments={"tool": "drill", "gui": "false", "rviz": "true"}.items(),
    )
    # The X server outlives the launch (stopped at exit): RViz2 must shut down with its display.
    xvfb = subprocess.Popen(
        ["Xvfb", DISPLAY, "-screen", "0", f"{SCREEN[0]}x{SCREEN[1]}x24", "-nolisten", "tcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    atexit.register(xvfb.terminate)
    return LaunchDescription(
        [
            SetEnvironmentVariable("DISPLAY", DISPLAY),
            SetEnvironmentVariable("LIBGL_ALWAYS_SOFTWARE", "1"),
            display,
            launch_testing.actions.ReadyToTest(),
        ]
    )


def screenshot(path: Path) -> np.ndarray:
    """The whole virtual screen as (H, W, 3) uint8, also written to `path`."""
    subprocess.run(["import", "-display", DISPLAY, "-window", "root", str(path)], check=True, timeout=30)
    return np.asarray(Image.open(path).convert("RGB"))


def panel_text(image: np.ndarray, path: Path) -> str:
    """OCR of the Displays panel (enlarged twice: tesseract reads 9 pt UI text poorly)."""
    x, y, w, h = PANEL
    Image.fromarray(image[y : y + h, x : x + w]).resize((2 * w, 2 * h)).save(path)
    result = subprocess.run(["tesseract", str(path), "-"], capture_output=True, text=True, timeout=60)
    return result.stdout


def pixels_of_colour(image: np.ndarray, rgba: list[float], tolerance: float = 0.06) -> int:
    """Pixels of the 3D view whose chromaticity (r, g, b)/(r + g + b) is that of `rgba` (shading
    scales a lit colour's brightness but keeps its chromaticity)."""
    x, y, w, h = VIEW
    view = image[y : y + h, x : x + w].astype(float)
    total = view.sum(axis=-1, keepdims=True)
    bright = total[..., 0] > 60
    chroma = view / np.maximum(total, 1.0)
    target = np.asarray(rgba[:3]) / sum(rgba[:3])
    return int((bright & (np.abs(chroma - target).max(axis=-1) < tolerance)).sum())


class TestDisplay(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.node = rclpy.create_node("test_display_launch")

    @classmethod
    def tearDownClass(cls):
        cls.node.destroy_node()
        rclpy.shutdown()

    def _wait(self, message_type, topic, qos, accept=lambda message: True):
        received = []
        subscription = self.node.create_subscription(
            message_type, topic, lambda m: received.append(m) if accept(m) else None, qos
        )
        deadline = time.monotonic() + TIMEOUT
        while not received and time.monotonic() < deadline:
            rclpy.spin_once(self.node, timeout_sec=0.1)
        self.node.destroy_subscription(subscription)
        self.assertTrue(received, f"nothing on {topic} within {TIMEOUT} s")
        return received[0]

    def test_robot_description_is_the_quirobot_urdf(self):
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        message = self._wait(String, "/robot_description", latched)
        root = ET.fromstring(message.data)
        links = {link.get("name") for link in root.findall("link")}
        self.assertTrue({"world", "base_link", "tool0", "drill_bit", "drill_tip"} <= links)

    def test_tf_carries_the_moving_links(self):
        moving = {"x_carriage", "y_carriage", "z_ram", "wrist_yaw_link", "wrist_pitch_link", "drill_bit"}
        message = self._wait(
            TFMessage,
            "/tf",
            QoSProfile(depth=100),
            accept=lambda m: moving <= {t.child_frame_id for t in m.transforms},
        )
        self.assertTrue(moving <= {t.child_frame_id for t in message.transforms})

    def test_tf_static_carries_tool0(self):
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        message = self._wait(TFMessage, "/tf_static", latched)
        self.assertIn("tool0", {t.child_frame_id for t in message.transforms})

    def test_rviz_draws_the_robot_with_every_status_ok(self):
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot, ocr = ARTIFACTS / "rviz.png", ARTIFACTS / "rviz_panel.png"
        links = {link.name: link for link in load_parameters().links}
        colours = {name: links[name].colour for name in ("x_carriage", "y_carriage")}
        deadline = time.monotonic() + TIMEOUT
        text, drawn = "", {}
        # RViz is up once its panel reports the RobotModel's status and the carriages are drawn.
        while time.monotonic() < deadline:
            time.sleep(2.0)
            try:
                image = screenshot(shot)
            except subprocess.CalledProcessError:
                continue  # the X server is still starting
            text = panel_text(image, ocr)
            drawn = {name: pixels_of_colour(image, rgba) for name, rgba in colours.items()}
            if text.count("Status: Ok") >= 3 and min(drawn.values()) > MIN_PIXELS:
                break
        self.assertGreaterEqual(text.count("Status: Ok"), 3, f"Displays panel (OCR of {ocr}):\n{text}")
        for label in ("Global Status: Ok", "RobotModel", "TF"):
            self.assertIn(label, text, f"Displays panel (OCR of {ocr}):\n{text}")
        for word in ("Error", "Warn"):
            self.assertNotIn(word, text, f"Displays panel (OCR of {ocr}):\n{text}")
        for name, count in drawn.items():
            self.assertGreater(count, MIN_PIXELS, f"{name} not drawn in {shot}: {count} px of its colour")


@launch_testing.post_shutdown_test()
class TestDisplayShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info, allowable_exit_codes=[0, -2, -15])
