"""RViz2 on a virtual screen, seen as a person would: what the ROS-tier display tests share.

`start_xvfb` starts an X server that outlives the launch (RViz2 must shut down with its display),
`look_at_rviz` takes screenshots until RViz2 shows the robot (or a deadline passes) and returns
what it saw: the Displays panel read back by OCR (tesseract) and, per link, how many pixels of the
3D view have that link's URDF colour (and of any further named colours asked for: a marker's
translucent colour is seen blended over the background). Layout constants are those of
rviz/quirobot.rviz on a 1280 x 960 screen.

Needs Xvfb, ImageMagick's `import` and tesseract (`missing_tools()` names the absent ones).
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from quirobot_description.parameters import load_parameters

#: The virtual X display: one per ROS domain, so parallel runs on one machine do not meet.
DISPLAY = f":{90 + int(os.environ.get('ROS_DOMAIN_ID', '0')) % 100}"
SCREEN = (1280, 960)
#: The 3D view and the Displays panel in the screenshot (x, y, width, height), px.
VIEW = (460, 62, 818, 806)
PANEL = (0, 60, 440, 380)
#: The 3D view's background (rviz/quirobot.rviz: Global Options, Background Color), 0-255.
BACKGROUND = (48, 48, 48)
#: Pixels of its URDF colour each carriage covers at least in the view (seen: x about 6200, y about
#: 260 behind the ram; an empty view or the TF axes alone: 0).
MIN_PIXELS = 100
#: Links whose colours show that the robot is drawn.
MARKER_LINKS = ("x_carriage", "y_carriage")
ARTIFACTS = Path(os.environ.get("QUIROBOT_ARTIFACTS", "/tmp"))


def missing_tools() -> list[str]:
    return [tool for tool in ("Xvfb", "import", "tesseract") if shutil.which(tool) is None]


def start_xvfb() -> None:
    """Start the X server on DISPLAY, stopped when the test process exits."""
    xvfb = subprocess.Popen(
        ["Xvfb", DISPLAY, "-screen", "0", f"{SCREEN[0]}x{SCREEN[1]}x24", "-nolisten", "tcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    atexit.register(xvfb.terminate)


@dataclass
class RvizView:
    panel: str  # OCR of the Displays panel
    pixels: dict[str, int]  # link (or named colour) -> pixels of its colour in the 3D view
    screenshot: Path
    panel_image: Path

    @property
    def statuses_ok(self) -> int:
        return self.panel.count("Status: Ok")

    def shows_robot(self) -> bool:
        return self.statuses_ok >= 3 and min(self.pixels[name] for name in MARKER_LINKS) > MIN_PIXELS


def look_at_rviz(
    name: str,
    timeout: float = 120.0,
    ready=RvizView.shows_robot,
    colours: dict[str, tuple[float, ...]] | None = None,
    tolerance: float = 0.06,
) -> RvizView:
    """Screenshots every 2 s until `ready(view)` or `timeout` s; the last view. `name` names the
    artifacts (ARTIFACTS/name.png and name_panel.png); `colours` (name -> r, g, b, a in [0, 1])
    are counted in `pixels` (chromaticity within `tolerance`) beside MARKER_LINKS' URDF colours."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot, panel = ARTIFACTS / f"{name}.png", ARTIFACTS / f"{name}_panel.png"
    links = {link.name: link for link in load_parameters().links}
    wanted = {name: (links[name].colour, 0.06) for name in MARKER_LINKS}
    wanted |= {name: (rgba, tolerance) for name, rgba in (colours or {}).items()}
    view = RvizView("", dict.fromkeys(wanted, 0), shot, panel)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(2.0)
        try:
            subprocess.run(
                ["import", "-display", DISPLAY, "-window", "root", str(shot)], check=True, timeout=30
            )
        except subprocess.CalledProcessError:
            continue  # the X server is still starting
        image = np.asarray(Image.open(shot).convert("RGB"))
        view = RvizView(
            _panel_text(image, panel),
            {name: pixels_of_colour(image, *colour) for name, colour in wanted.items()},
            shot,
            panel,
        )
        if ready(view):
            break
    return view


def _panel_text(image: np.ndarray, path: Path) -> str:
    """OCR of the Displays panel (enlarged twice: tesseract reads 9 pt UI text poorly)."""
    x, y, w, h = PANEL
    Image.fromarray(image[y : y + h, x : x + w]).resize((2 * w, 2 * h)).save(path)
    result = subprocess.run(["tesseract", str(path), "-"], capture_output=True, text=True, timeout=60)
    return result.stdout


def pixels_of_colour(image: np.ndarray, rgba: tuple[float, ...], tolerance: float = 0.06) -> int:
    """Pixels of the 3D view whose chromaticity (r, g, b)/(r + g + b) is that of `rgba` (shading
    scales a lit colour's brightness but keeps its chromaticity). A translucent colour (alpha a < 1)
    is drawn as a * lit + (1 - a) * BACKGROUND: that share of the background is taken off first."""
    x, y, w, h = VIEW
    alpha = rgba[3] if len(rgba) > 3 else 1.0
    view = image[y : y + h, x : x + w].astype(float) - (1.0 - alpha) * np.asarray(BACKGROUND, dtype=float)
    total = view.sum(axis=-1, keepdims=True)
    bright = total[..., 0] > 60 * alpha  # the marker's own share of the light, not the dark
    chroma = view / np.maximum(total, 1.0)
    target = np.asarray(rgba[:3]) / sum(rgba[:3])
    return int((bright & (np.abs(chroma - target).max(axis=-1) < tolerance)).sum())
