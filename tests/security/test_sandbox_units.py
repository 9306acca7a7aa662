"""The sandbox's pieces in process: settings under trust, shared placeholders, excluded commands."""

from __future__ import annotations

from pathlib import Path

from services.sandbox_settings import SandboxSettings
from services.settings import SettingsFile, merge
from tools.sandbox import Availability, Sandbox, is_excluded


def _merged(trusted: bool, *files: tuple[str, dict]):  # noqa: ANN202
    return merge([SettingsFile(scope, f"/{scope}.json", data) for scope, data in files], trusted)


def test_an_untrusted_folder_only_tightens():
    m = _merged(False, ("user", {"sandbox": {"autoAllowBashIfSandboxed": True}}),
                ("project", {"sandbox": {"enabled": False, "autoAllowBashIfSandboxed": False,
                                         "excludedCommands": ["rm"], "filesystem": {"denyRead": ["~/x"]}}}))
    assert m.sandbox.enabled is None and m.sandbox.auto_allow is False
    assert m.sandbox.excluded_commands == [] and m.sandbox.deny_read == ["~/x"]
    assert "sandbox.enabled: false" in m.ignored and "sandbox.excludedCommands" in m.ignored


def test_a_users_tightening_holds_against_a_trusted_project():
    m = _merged(True, ("user", {"sandbox": {"allowUnsandboxedCommands": False}}),
                ("project", {"sandbox": {"allowUnsandboxedCommands": True, "excludedCommands": ["make"]}}))
    assert m.sandbox.allow_unsandboxed is False and m.sandbox.excluded_commands == ["make"]


def test_bad_values_name_the_file_and_field():
    m = _merged(True, ("user", {"sandbox": {"enabled": "yes", "network": {"allowedDomains": "x"}}}))
    assert any("/user.json" in w and "sandbox.enabled" in w for w in m.warnings)
    assert any("network.allowedDomains" in w for w in m.warnings)


def test_excluded_commands_need_every_part_to_match():
    assert is_excluded("docker ps", ["docker *"])
    assert is_excluded("docker ps | grep x", ["docker *", "grep *"])
    assert not is_excluded("docker ps && rm -rf ~", ["docker *"])
    assert not is_excluded("docker ps > out", ["docker *"])
    assert not is_excluded("cd / && docker ps", ["docker *", "cd *"])


def test_placeholders_are_shared_until_the_last_command_ends(tmp_path: Path):
    project = tmp_path / "p"
    project.mkdir()
    sb = Sandbox(SandboxSettings(), Availability(True, path="/usr/bin/bwrap"), project, tmp_path, tmp_path / "h")
    first = sb.wrap(["true"], project, {})
    second = sb.wrap(["true"], project, {})
    first.release()
    assert (project / ".envrc").is_dir() and (project / ".claude").is_dir()
    second.release()
    assert not (project / ".envrc").exists() and not (project / ".claude").exists()
    (project / ".envrc").write_text("real")  # a real file is bound as it is, never removed
    third = sb.wrap(["true"], project, {})
    third.release()
    assert (project / ".envrc").read_text() == "real"


def test_a_symlinked_protected_path_is_refused_and_commondir_is_removed(tmp_path: Path):
    import pytest

    from tools.sandbox import SandboxRefused

    project = tmp_path / "p"
    (project / ".git").mkdir(parents=True)
    sb = Sandbox(SandboxSettings(), Availability(True, path="/usr/bin/bwrap"), project, tmp_path, tmp_path / "h")
    wrapped = sb.wrap(["true"], project, {})
    (project / ".git" / "commondir").write_text("/tmp/evil\n")  # as the command would have
    assert wrapped.release() == [str(project / ".git" / "commondir")]
    assert not (project / ".git" / "commondir").exists()
    (project / ".claude").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(SandboxRefused, match="symbolic link"):
        sb.wrap(["true"], project, {})


def test_a_held_git_placeholder_is_not_taken_for_a_repository(tmp_path: Path):
    project = tmp_path / "p"
    project.mkdir()
    sb = Sandbox(SandboxSettings(), Availability(True, path="/usr/bin/bwrap"), project, tmp_path, tmp_path / "h")
    first = sb.wrap(["true"], project, {})
    second = sb.wrap(["true"], project, {})  # .git is now our empty directory
    git = str(project / ".git")
    # read-only as a whole, the same arguments as the first time: never bound writable as a repository
    assert [second.argv[i - 1] for i, a in enumerate(second.argv) if a == git] == ["--ro-bind", git]
    assert [a for a in second.argv if a.startswith(git)] == [a for a in first.argv if a.startswith(git)]
    first.release()
    second.release()
    assert not (project / ".git").exists()
