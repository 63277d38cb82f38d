"""`quirobot size` on the command line: JSON contract, table, plot, progress bar, one-line errors."""

from __future__ import annotations

import json

import pytest
import yaml

from quirobot_cli.cli import main
from quirobot_description.parameters import DEFAULT_PARAMETER_FILE, JOINT_NAMES

KEYS = {"name", "peak_torque", "nominal_torque", "rms_torque", "peak_speed", "motor", "ok", "margin"}


def test_report_json(capsys):
    assert main(["size", "--model", "report", "--json"]) == 0
    out = capsys.readouterr().out
    data = json.loads(out)
    assert set(data) == {"joints"}
    assert [j["name"] for j in data["joints"]] == list(JOINT_NAMES)
    assert all(set(j) == KEYS for j in data["joints"])
    gantry_z = data["joints"][2]
    assert round(gantry_z["nominal_torque"], 4) == 1.2385  # report ch.6 table entry
    assert gantry_z["peak_speed"] == pytest.approx(95.0)  # 1 m/s through the 95 rad/m screw


def test_physical_table_plot_and_progress(tmp_path, capsys):
    plot = tmp_path / "sizing.png"
    assert main(["size", "--poses", "300", "--plot", str(plot)]) == 0
    captured = capsys.readouterr()
    assert "searching poses" in captured.err  # tqdm progress bar on stderr
    for name in JOINT_NAMES:
        assert name in captured.out
    assert "worst of 300 poses" in captured.out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_progress_keeps_stderr_clean(capsys):
    assert main(["size", "--poses", "10", "--no-progress", "--json"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert len(json.loads(captured.out)["joints"]) == 5


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["size", "--poses", "0"], "--poses must be a whole number from 1 to 20000"),
        (["size", "--model", "report", "--poses", "5"], "--poses applies to the physical model"),
    ],
)
def test_bad_arguments_give_one_line_errors(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and err.startswith("quirobot size: error:")


def test_bad_parameter_file_is_named(tmp_path, capsys):
    raw = yaml.safe_load(DEFAULT_PARAMETER_FILE.read_text())
    raw["sizing"]["safety_factor"]["value"] = 0.5
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(raw))
    assert main(["size", "--model", "report", "--parameter-file", str(path)]) == 2
    err = capsys.readouterr().err
    assert "sizing.safety_factor" in err and "must be >= 1" in err


def test_help(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["size", "--help"])
    assert exit_info.value.code == 0
    assert "--model" in capsys.readouterr().out
