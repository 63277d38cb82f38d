"""`quirobot register --output` and `calibrate --output` (issue 33 item 13): they overwrote an existing
file, also through a symbolic link (whatever it pointed at). Now an existing file is kept unless
--force, and a symbolic link is never written through, with or without --force; one line, exit 2,
before the work."""

from __future__ import annotations

import os

import pytest

from quirobot_cli.cli import main
from quirobot_cli.output_paths import OutputPathError, write_output_text
from quirobot_kinematics.registration import read_registration

#: Each verb, fast: register simulates a registration, calibrate a whole campaign (seconds).
VERBS = {"register": ["register", "--seed", "1"], "calibrate": ["calibrate", "--seed", "2"]}


def _refused(capsys, argv: list[str], *words: str) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured.err
    for word in words:
        assert word in captured.err, captured.err


@pytest.mark.parametrize("verb", VERBS)
def test_an_existing_file_is_kept_unless_force(tmp_path, capsys, verb):
    output = tmp_path / "out.yaml"
    output.write_text("a file someone keeps\n")
    _refused(capsys, [*VERBS[verb], "--output", str(output)], str(output), "exists", "--force")
    assert output.read_text() == "a file someone keeps\n"
    assert main([*VERBS[verb], "--output", str(output), "--force"]) == 0
    capsys.readouterr()
    assert "schema_version: " in output.read_text()
    assert not [path for path in tmp_path.iterdir() if path.name.startswith(".")]  # no temporary left


@pytest.mark.parametrize("force", [False, True], ids=["without --force", "with --force"])
@pytest.mark.parametrize("verb", VERBS)
def test_a_symbolic_link_is_never_written_through(tmp_path, capsys, verb, force):
    precious = tmp_path / "precious.yaml"
    precious.write_text("not to be overwritten\n")
    link = tmp_path / "out.yaml"
    link.symlink_to(precious)
    _refused(capsys, [*VERBS[verb], "--output", str(link), *(["--force"] if force else [])], "symbolic link")
    assert precious.read_text() == "not to be overwritten\n" and link.is_symlink()
    dangling = tmp_path / "dangling.yaml"
    dangling.symlink_to(tmp_path / "made_elsewhere.yaml")
    _refused(capsys, [*VERBS[verb], "--output", str(dangling)], "symbolic link")
    assert not (tmp_path / "made_elsewhere.yaml").exists()


def test_a_new_file_is_written_and_reads_back(tmp_path, capsys):
    output = tmp_path / "new" / "registration.yaml"
    assert main([*VERBS["register"], "--output", str(output)]) == 0
    capsys.readouterr()
    read_registration(output)


def test_the_write_itself_neither_follows_a_link_nor_clobbers_a_file_made_after_the_check(tmp_path):
    """The check comes before the work; a file or link put there meanwhile is still safe."""
    target = tmp_path / "target.yaml"
    target.write_text("kept\n")
    link = tmp_path / "out.yaml"
    link.symlink_to(target)
    with pytest.raises(OutputPathError, match="exists"):
        write_output_text(link, "new\n")
    assert target.read_text() == "kept\n"
    write_output_text(link, "new\n", force=True)  # the link itself is replaced, never its target
    assert target.read_text() == "kept\n" and not link.is_symlink() and link.read_text() == "new\n"
    assert oct(os.stat(link).st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
