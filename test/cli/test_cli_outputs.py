"""Fail before the work: output paths checked first, task files refused by name.

A path that cannot be written is refused before a 30 s simulation, not after it; a missing parent
folder is named (not created); a task file with an unknown key, or a file that is not a task,
says so. Tests run as root, for whom permission bits do not stop a write: a really read-only
folder is a read-only tmpfs mounted in a private mount namespace (unshare -m).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from quirobot_cli.cli import main
from quirobot_cli.output_paths import OutputPathError, output_file, output_folder
from quirobot_cli.simulation_commands import DEFAULT_OUTPUT
from quirobot_control.planning.tasks import TaskError, load_task
from quirobot_description.parameters import DEFAULT_PARAMETER_FILE


def _refused(capsys, argv: list[str], *words: str) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    # One line and nothing else: no progress bar, so the simulation never started.
    assert captured.out == "" and captured.err.count("\n") == 1, captured.err
    for word in words:
        assert word in captured.err, captured.err
    return captured.err


def test_simulate_refuses_an_output_whose_log_file_a_folder_takes_before_running(tmp_path, capsys):
    (tmp_path / "incision.mcap").mkdir()
    _refused(capsys, ["simulate", "--output", str(tmp_path)], f"{tmp_path / 'incision.mcap'}", "a folder")
    assert not (tmp_path / "incision.png").exists()


def test_simulate_refuses_an_output_folder_under_a_file(tmp_path, capsys):
    blocker = tmp_path / "notes.txt"
    blocker.write_text("a file, not a folder")
    _refused(capsys, ["simulate", "--output", str(blocker / "out")], f"{blocker} is not a folder")


def test_simulate_names_a_missing_parent_folder_instead_of_creating_it(tmp_path, capsys):
    missing = tmp_path / "missing"
    _refused(
        capsys,
        ["simulate", "--task", "line", "--output", str(missing / "out")],
        f"the folder {missing} does not exist",
    )
    assert not missing.exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["render", "{missing}/robot.png"],
        ["export", "{missing}/urdf"],
        ["workspace", "--samples", "10", "--plot", "{missing}/ws.png"],
        ["size", "--model", "report", "--plot", "{missing}/sizing.png"],
    ],
    ids=["render", "export", "workspace", "size"],
)
def test_every_verb_names_a_missing_parent_folder(argv, tmp_path, capsys):
    missing = tmp_path / "nonexistent_parent"
    argv = [word.format(missing=missing) for word in argv]
    _refused(capsys, argv, f"the folder {missing} does not exist")
    assert not missing.exists()


def test_render_refuses_a_file_that_is_not_a_png(tmp_path, capsys):
    _refused(capsys, ["render", str(tmp_path / "robot.jpg")], "must be a .png file")


def _in_a_read_only_folder(tmp_path, command: str) -> subprocess.CompletedProcess:
    """Run `command` (bash; $RO is the folder) with a read-only tmpfs mounted on tmp_path/ro."""
    if shutil.which("unshare") is None or shutil.which("quirobot") is None:
        pytest.skip("needs unshare (util-linux) and the quirobot console script")
    folder = tmp_path / "ro"
    folder.mkdir()
    probe = subprocess.run(
        ["unshare", "-m", "mount", "-t", "tmpfs", "-o", "ro", "tmpfs", str(folder)], capture_output=True
    )
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {probe.stderr.decode().strip()}")
    script = f'RO={folder}; mount -t tmpfs -o ro tmpfs "$RO" && cd {tmp_path} && {command}'
    return subprocess.run(
        ["unshare", "-m", "bash", "-c", script], capture_output=True, text=True, timeout=120
    )


def test_simulate_refuses_a_read_only_folder_before_running(tmp_path):
    result = _in_a_read_only_folder(tmp_path, 'quirobot simulate --output "$RO"')
    assert result.returncode == 2, result.stderr
    assert result.stderr == f"quirobot simulate: error: cannot write into {tmp_path / 'ro'}: the folder " + (
        f"{tmp_path / 'ro'} is not writable\n"
    )


def test_render_refuses_a_read_only_folder(tmp_path):
    result = _in_a_read_only_folder(tmp_path, 'quirobot render "$RO/robot.png"')
    assert result.returncode == 2 and "is not writable" in result.stderr, result.stderr


def test_output_helpers_create_only_the_last_folder(tmp_path):
    assert output_folder(tmp_path / "new").is_dir()
    assert output_file(tmp_path / "new" / "a.png", ".png") == tmp_path / "new" / "a.png"
    with pytest.raises(OutputPathError, match="does not exist"):
        output_folder(tmp_path / "a" / "b")
    with pytest.raises(OutputPathError, match="must be a .png file"):
        output_file(tmp_path / "a.PNG.txt", ".png")


def _incision(tmp_path, edit) -> str:
    raw = yaml.safe_load(load_task("incision").path.read_text())
    edit(raw)
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(raw))
    return str(path)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(depht=d["depth"]), "unknown key depht \\(task: incision takes task, entry"),
        (lambda d: d["line"].update(sped=1.0), "unknown key line.sped"),
        (lambda d: d["bone"]["layers"][1].update(thicknes=1.0), r"unknown key bone\.layers\[1\]\.thicknes"),
        (lambda d: d["depth"].update(units="m"), "unknown key depth.units"),
        (lambda d: d.update(a=1, b=2), "unknown keys a, b"),
    ],
    ids=["top", "line", "bone-layer", "leaf", "two"],
)
def test_an_unknown_key_in_a_task_file_is_refused_by_name(edit, message, tmp_path):
    with pytest.raises(TaskError, match=message):
        load_task(_incision(tmp_path, edit))


def test_a_file_that_is_not_a_task_says_so(tmp_path, capsys):
    _refused(
        capsys,
        ["simulate", "--task", str(DEFAULT_PARAMETER_FILE), "--output", str(tmp_path)],
        f"{DEFAULT_PARAMETER_FILE} is not a task file: it has no 'task' key",
    )
    with pytest.raises(TaskError, match="task must be one of incision, line, got"):
        load_task(_incision(tmp_path, lambda d: d.update(task=["incision"])))


def test_the_default_output_folder_is_ignored_by_git():
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    for name in ("incision.png", "incision.mcap", "line.png"):
        result = subprocess.run(
            ["git", "check-ignore", "--quiet", f"{DEFAULT_OUTPUT}/{name}"], cwd=root, check=False
        )
        assert result.returncode == 0, f"{DEFAULT_OUTPUT}/{name} is not git-ignored (.gitignore)"
