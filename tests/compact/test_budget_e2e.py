"""Stage 1 end to end: the real loop and SDK against the fake Anthropic server. Four large Bash outputs in
parallel are relocated to disk; the model then Reads a spill path and gets the full text back."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from agent.loop.factory import AppOptions, build_engine
from services.config import Settings
from services.events import NoticeEvent
from services.tool_result_storage import PERSISTED_OUTPUT_TAG, spill_path
from tests.fake_anthropic import FakeAnthropic, tool_block

N_LINES = 4000  # lines of ~16 chars: 60+ KB per command, over Bash's 30000 threshold


def _results(messages: list[dict]) -> dict[str, object]:
    return {b["tool_use_id"]: b["content"] for m in messages if m["role"] == "user" and isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_result"}


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")  # type: ignore[union-attr]


async def test_parallel_bash_outputs_spilled_then_read(fake_env: FakeAnthropic, workdir: Path):
    engine = build_engine(AppOptions(cwd=workdir, settings=Settings.from_env(), permission_mode="bypassPermissions"))
    if "Bash" not in {t.name for t in engine.tools}:  # pragma: no cover - the Bash tool lands separately
        import pytest

        pytest.skip("no Bash tool")
    ids = [f"toolu_big_{i}" for i in range(4)]
    cmds = [f"python3 -c \"[print('out{i} line', n) for n in range({N_LINES})]\"" for i in range(4)]
    spill = spill_path(engine.session_dir / "tool-results", ids[0])
    fake_env.reply("Running four commands.", *(tool_block("Bash", {"command": c}, id=t) for c, t in zip(cmds, ids, strict=True)))
    fake_env.reply(tool_block("Read", {"file_path": str(spill), "offset": 3990, "limit": 5}, id="toolu_read"))
    fake_env.reply("All done.")

    notices = []
    async for ev in engine.run_turn("run the four commands"):
        if isinstance(ev, NoticeEvent):
            notices.append((ev.kind, ev.text))
    engine.close()

    reqs = [r for r in fake_env.requests if r.path == "/v1/messages"]
    assert len(reqs) == 3
    second = _results(reqs[1].messages)
    for i, tid in enumerate(ids):
        sent = _text(second[tid])
        assert sent.startswith(PERSISTED_OUTPUT_TAG), tid
        assert f"out{i} line 0\n" in sent and len(sent) < 3000
        path = spill_path(engine.session_dir / "tool-results", tid)
        assert f"Full output saved to: {path}" in sent
        assert path.read_text().splitlines()[-1] == f"out{i} line {N_LINES - 1}"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not list(workdir.rglob("*.txt"))  # nothing spilled into the project
    assert [k for k, _ in notices].count("spill") == 4
    assert any(t.startswith("Output of Bash (") and str(spill) in t for _, t in notices)

    # The Read of the spill path returned the tail of the full output, which no preview contained.
    third = _results(reqs[2].messages)
    read_back = _text(third["toolu_read"])
    assert "out0 line 3989" in read_back and "out0 line 3993" in read_back  # offset is 1-based
    # The third request re-applied the pointers byte for byte: its prefix is the second request.
    # (cache_control markers move to the last message; they are not content.)
    assert _plain(reqs[2].messages[: len(reqs[1].messages)]) == _plain(reqs[1].messages)


def _plain(value: object) -> str:
    def strip(v: object) -> object:
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k != "cache_control"}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v

    return json.dumps(strip(value), ensure_ascii=False)
