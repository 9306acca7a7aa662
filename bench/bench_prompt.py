"""What the model reads before the conversation: the system prompt and the tool schemas, in tokens, against
Claude Code's (from tests/fixtures/claude_code/, recorded from the real binary).

Tokens are estimated as characters / 4 on both sides (services/tokens' ratio for prose); the exact count
needs the API's count_tokens. Our prompt is built in a fresh git repository with no project context, no
memory and no skills: the floor every session pays, with the tools the engine really offers (the Agent tool included). Claude Code's prompt is the three `system` blocks of a
`-p` run (it also sends a ~6 KB `role: system` message listing its agents and skills, not counted here).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import tempfile
from pathlib import Path

from common import ROOT, header  # noqa: F401 (ROOT puts the project on sys.path)

from agent.loop.deps import QueryDeps
from agent.loop.factory import AppOptions, build_engine
from agent.model.scripted import ScriptedModel
from services.config import Settings

FIXTURES = ROOT / "tests" / "fixtures" / "claude_code"


def tokens(chars: int) -> int:
    return math.ceil(chars / 4)


def main() -> None:
    header("System prompt and tool schemas vs Claude Code (tokens ~ chars / 4)")
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(["git", "init", "-q", d], check=True)
        os.environ["AGENT_HOME"] = str(Path(d) / ".home")  # nothing of the user's settings or skills
        engine = build_engine(AppOptions(cwd=Path(d), settings=Settings()), deps=QueryDeps(ScriptedModel([])))
        prompt = engine.config.system_prompt
        offered = [t.to_api() for t in engine.tools]
    system = json.loads((FIXTURES / "system.json").read_text())["blocks"]
    shape = json.loads((FIXTURES / "request_shape.json").read_text())
    cc_tools = json.loads((FIXTURES / "tools.json").read_text())["tools"]
    version = (FIXTURES / "version.txt").read_text().strip()
    ours = {t["name"]: len(json.dumps(t, ensure_ascii=False)) for t in offered}
    cc_system = sum(b["chars"] for b in system)
    rows = [("system prompt", len(prompt), cc_system)]
    for name in sorted(set(ours) | set(cc_tools)):
        rows.append((f"tool {name}", ours.get(name, 0), cc_tools.get(name, {}).get("tool_json_chars", 0)))
    common = sorted(set(ours) & set(cc_tools))
    rows.append(("tools both offer", sum(ours[n] for n in common), sum(cc_tools[n]["tool_json_chars"] for n in common)))
    rows.append(("all tools offered", sum(ours.values()), shape["all_tools_json_chars"]))
    rows.append(("system + all tools", len(prompt) + sum(ours.values()), cc_system + shape["all_tools_json_chars"]))
    print(f"Claude Code {version}; this agent's default tools ({len(ours)}) vs Claude Code's -p tools "
          f"({len(shape['tool_names'])}, Glob/Grep opted in)")
    print(f"{'':26s} {'ours chars':>10s} {'~tokens':>8s} {'CC chars':>10s} {'~tokens':>8s} {'ours/CC':>8s}")
    for label, mine, theirs in rows:
        ratio = f"{mine / theirs:.2f}" if theirs else "-"
        print(f"{label:26s} {mine:10d} {tokens(mine):8d} {theirs:10d} {tokens(theirs):8d} {ratio:>8s}")


if __name__ == "__main__":
    main()
