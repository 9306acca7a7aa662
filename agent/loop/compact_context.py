"""The autocompact context for the loop and for /compact: one builder, so both take the same path."""

from __future__ import annotations

from typing import Any

from services.compact.autocompact import AutocompactContext
from services.compact.estimate import fixed_units
from services.compact.options import CompactOptions
from services.compact.pipeline import Microcompact
from services.compact.state import ContentReplacementState
from services.compact.types import PipelineEnv
from services.server_tools import replaced_client_tools, server_tool_specs
from tools.base import Tool, ToolContext


def tool_specs_for(tools: list[Tool], server_tools: list[str]) -> list[dict[str, Any]]:
    """The request's tool list: server tools (run by the API) replace their client-side counterparts."""
    replaced = replaced_client_tools(server_tools)
    return [t.to_api() for t in tools if t.name not in replaced] + server_tool_specs(server_tools)


def pipeline_env(tools: list[Tool], ctx: ToolContext, system: str = "", specs: list[dict[str, Any]] | None = None) -> PipelineEnv:
    return PipelineEnv(
        max_result_chars={t.name: t.max_result_chars for t in tools},
        previewers={t.name: t.spill_preview for t in tools},
        spill_dir=(ctx.session_dir / "tool-results") if ctx.session_dir else None,
        fixed_units=fixed_units(system, specs or []),
    )


def build_autocompact_context(
    system: str,
    model: str,
    call_model: Any,
    compact: CompactOptions,
    state: dict[str, Any],
    tool_specs: list[dict[str, Any]],
    replacement_state: ContentReplacementState | None,
    env: PipelineEnv | None,
    microcompact: Microcompact | None,
    ctx: ToolContext,
) -> AutocompactContext:
    session = ctx.session
    usage = session.usage
    todos = session.todos
    transcript = str(ctx.session_dir.parent / f"{ctx.session_dir.name}.jsonl") if ctx.session_dir else None
    return AutocompactContext(
        system, model, call_model, compact, state,
        tools=list(tool_specs), replacement_state=replacement_state, env=env, microcompact=microcompact,
        cwd=session.cwd, read_paths=set(session.read_state), todos=[dict(t) for t in todos] if todos is not None else None,
        transcript_path=transcript,
        add_usage=(lambda u, m: usage.add(u, model=m)) if usage is not None else None,
    )
