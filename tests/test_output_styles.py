"""Output styles through the real CLI (`agent -p`), against Claude Code 2.1.332's recording
(tests/fixtures/claude_code/output_styles.json): the built-ins' exact prompts, files in the project's and
the user's `.claude/output-styles/`, `outputStyle` in settings, and the worst inputs."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.conftest import CliRunner
from tests.fake_anthropic import FakeAnthropic

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "claude_code" / "output_styles.json").read_text())
PIRATE = "---\nname: Pirate\ndescription: Talks like a pirate\nkeep-coding-instructions: true\n---\n\n{body}\n"


def _recorded_section(scenario: str) -> str:
    """The lines Claude Code added for a style, from `# Output Style:` to the end of its prompt."""
    added = FIXTURE["scenarios"][scenario]["added_lines"]
    start = next(i for i, ln in enumerate(added) if ln.startswith("# Output Style: "))
    end = next(i for i, ln in enumerate(added) if ln.endswith("output style is active. Remember to follow the "
                                                              "specific guidelines for this style."))
    return "\n".join(added[start:end]).strip()


def _run(cli: CliRunner, fake: FakeAnthropic, workdir: Path, style: str | None, *args: str, **env: str):
    if style is not None:
        (workdir / ".claude").mkdir(exist_ok=True)
        (workdir / ".claude" / "settings.json").write_text(json.dumps({"outputStyle": style}))
    fake.reply("ok")
    result = cli("-p", "hi", *args, **env)
    return result, fake.requests[-1].body["system"] if fake.requests else None


def _text(system) -> str:
    return system if isinstance(system, str) else "\n".join(b.get("text", "") for b in system)


def _lines(text: str) -> set[str]:
    return set(text.splitlines())


def test_explanatory_reaches_the_system_prompt_as_claude_code_sends_it(cli, fake_anthropic, workdir) -> None:
    result, system = _run(cli, fake_anthropic, workdir, "Explanatory")
    assert result.code == 0, result.stderr
    text = _text(system)
    recorded = [ln for ln in _recorded_section("Explanatory").splitlines() if ln]
    assert _lines(text) >= set(recorded)
    assert "# Output Style: Explanatory" in text and "★ Insight" in text
    assert "Explanatory output style is active. Remember to follow the specific guidelines for this style." in text


def test_learning_prompt_is_exact(cli, fake_anthropic, workdir) -> None:
    _, system = _run(cli, fake_anthropic, workdir, "Learning")
    recorded = [ln for ln in _recorded_section("Learning").splitlines() if ln]
    assert _lines(_text(system)) >= set(recorded)


def test_default_has_no_style_section(cli, fake_anthropic, workdir) -> None:
    result, system = _run(cli, fake_anthropic, workdir, None)
    assert result.code == 0 and "# Output Style" not in _text(system)


def test_project_style_wins_over_the_users(cli, fake_anthropic, workdir, tmp_path) -> None:
    home = tmp_path / "userhome"
    (home / ".claude" / "output-styles").mkdir(parents=True)
    (home / ".claude" / "output-styles" / "pirate.md").write_text(PIRATE.format(body="USER pirate."))
    (workdir / ".claude" / "output-styles").mkdir(parents=True)
    (workdir / ".claude" / "output-styles" / "pirate.md").write_text(PIRATE.format(body="Project pirate."))
    _, system = _run(cli, fake_anthropic, workdir, "Pirate", HOME=str(home))
    text = _text(system)
    assert "# Output Style: Pirate\nProject pirate." in text and "USER pirate" not in text


def test_user_style_and_stream_json_init_name_it(cli, fake_anthropic, workdir, tmp_path) -> None:
    home = tmp_path / "userhome"
    (home / ".claude" / "output-styles").mkdir(parents=True)
    (home / ".claude" / "output-styles" / "pirate.md").write_text(PIRATE.format(body="USER pirate."))
    result, system = _run(cli, fake_anthropic, workdir, "Pirate", "--output-format", "stream-json", "--verbose",
                          HOME=str(home))
    init = next(json.loads(ln) for ln in result.stdout.splitlines() if '"subtype": "init"' in ln
                or '"subtype":"init"' in ln)
    assert init["output_style"] == "Pirate"
    assert "# Output Style: Pirate\nUSER pirate." in _text(system)


def test_unknown_style_is_one_warning_naming_file_and_field(cli, fake_anthropic, workdir) -> None:
    result, system = _run(cli, fake_anthropic, workdir, "NoSuchStyle")
    assert result.code == 0
    lines = [ln for ln in result.stderr.splitlines() if "NoSuchStyle" in ln]
    assert len(lines) == 1 and "settings.json" in lines[0] and "outputStyle" in lines[0], result.stderr
    assert "Traceback" not in result.stderr and "# Output Style" not in _text(system)


def test_style_file_linking_out_of_the_project_is_not_read(cli, fake_anthropic, workdir, tmp_path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text(PIRATE.format(body="SECRET-TOKEN-123"))
    (workdir / ".claude" / "output-styles").mkdir(parents=True)
    os.symlink(secret, workdir / ".claude" / "output-styles" / "pirate.md")
    result, system = _run(cli, fake_anthropic, workdir, "Pirate")
    assert "SECRET-TOKEN-123" not in _text(system)
    assert any("Pirate" in ln and "outputStyle" in ln for ln in result.stderr.splitlines()), result.stderr


def test_huge_and_bad_front_matter_files_do_not_break_a_run(cli, fake_anthropic, workdir) -> None:
    styles = workdir / ".claude" / "output-styles"
    styles.mkdir(parents=True)
    (styles / "huge.md").write_text("---\nname: Huge\n---\n" + "x" * 5_000_000)
    (styles / "broken.md").write_text("---\nname: [unclosed\n---\nBroken style body.\n")
    result, system = _run(cli, fake_anthropic, workdir, "Huge")
    assert result.code == 0 and "Traceback" not in result.stderr
    text = _text(system)
    assert "# Output Style: Huge" in text and len(text) < 400_000  # the file is read up to its cap
    fake_anthropic.reply("ok")
    (workdir / ".claude" / "settings.json").write_text(json.dumps({"outputStyle": "[unclosed"}))
    result = cli("-p", "hi")
    assert result.code == 0 and "Traceback" not in result.stderr


def test_a_setting_that_is_not_a_name_is_a_warning(cli, fake_anthropic, workdir) -> None:
    result, _ = _run(cli, fake_anthropic, workdir, None)
    (workdir / ".claude").mkdir(exist_ok=True)
    (workdir / ".claude" / "settings.json").write_text(json.dumps({"outputStyle": 3}))
    fake_anthropic.reply("ok")
    result = cli("-p", "hi")
    assert result.code == 0
    assert any("outputStyle" in ln and "settings.json" in ln for ln in result.stderr.splitlines()), result.stderr
