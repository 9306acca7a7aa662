"""Hook events Claude Code has, through the real CLI: an unknown event name in a settings file is one warning
naming the file (Claude Code 2.1.332's event list, recorded from the binary); a known one is quiet."""

from __future__ import annotations

import json

from services.trust import trust


def test_unknown_event_is_one_warning_naming_the_file(cli, workdir, fake_anthropic, tmp_path) -> None:
    settings = workdir / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {
        "PreToolUSe": [{"hooks": [{"type": "command", "command": "true"}]}],
        "PreCompact": [{"hooks": [{"type": "command", "command": "true"}]}],  # Claude Code's: no warning
        "Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}))
    trust(workdir, cli.agent_home)
    fake_anthropic.text("one")
    r = cli("-p", "hi", CLAUDE_CONFIG_DIR=str(tmp_path / "cc"))
    assert r.code == 0, r.stderr
    warnings = [ln for ln in r.stderr.splitlines() if "unknown hook event" in ln]
    assert warnings == [f"warning: {settings}: unknown hook event PreToolUSe (ignored; see Claude Code's hook events)"]
