"""Property tests: random JSON inputs through ToolRunner always give one well-formed tool_result each."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.messages import tool_use_block
from tools.base import SessionState, ToolContext
from tools.orchestration import BatchOutcome, ToolRunner
from tools.permissions import PermissionGate
from tools.registry import default_tools

KEYS = ["file_path", "content", "old_string", "new_string", "replace_all", "offset", "limit", "command",
        "timeout", "pattern", "path", "glob", "type", "output_mode", "-i", "-n", "-A", "-B", "-C", "context",
        "head_limit", "offset", "multiline", "description", "bogus"]
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-5, max_value=3000), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30), st.sampled_from(["a.txt", "sub", "..", "/", "*.py", "**/*", "-x", "(", "content", "count",
                                            "echo hi", "cd sub", "", "\x00", "caf\udce9"]),
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=6)
inputs = st.one_of(st.dictionaries(st.sampled_from(KEYS), values, max_size=5), values)
TOOL_NAMES = ["Read", "Write", "Edit", "Bash", "Grep", "Glob"]


def _well_formed(block: dict, tid: str) -> None:
    assert block["type"] == "tool_result" and block["tool_use_id"] == tid
    content = block["content"]
    assert isinstance(content, str | list)
    json.dumps(block, ensure_ascii=False).encode("utf-8")  # serialisable, valid UTF-8
    if block.get("is_error"):
        assert isinstance(content, str) and content.strip()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(TOOL_NAMES), raw=inputs)
def test_random_inputs_give_a_well_formed_result(tmp_path: Path, name: str, raw) -> None:
    project = tmp_path / "p"
    project.mkdir(exist_ok=True)
    (project / "a.txt").write_text("hello\nworld\n")
    (project / "sub").mkdir(exist_ok=True)
    if name == "Bash" and isinstance(raw, dict):
        raw = {**raw, "command": "echo safe"} if "command" in raw else raw  # never run random shell text
        if "timeout" in raw and isinstance(raw["timeout"], int) and raw["timeout"] > 2000:
            raw["timeout"] = 2000

    async def go():
        ctx = ToolContext(session=SessionState(cwd=project), project_root=project)
        runner = ToolRunner({t.name: t for t in default_tools()}, ctx, PermissionGate(mode="acceptEdits"))
        use = tool_use_block("toolu_prop", name, raw)
        outcome = None
        async for item in runner.run([use]):
            if isinstance(item, BatchOutcome):
                outcome = item
        return outcome

    outcome = asyncio.run(go())
    assert outcome is not None and len(outcome.results) == 1
    _well_formed(outcome.results[0], "toolu_prop")
