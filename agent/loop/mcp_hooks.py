"""What the front ends answer when an MCP server asks: sampling (a model call on the server's behalf) and
elicitation (a form for the user).

Sampling goes through the session's own model and provider, after a yes/no question (a one-shot run has
nobody to ask, so it declines unless the permission mode is bypassPermissions); its tokens join the
session's usage and a cost line is shown. Elicitation asks one question per field of the server's flat
form schema; without a way to ask (one-shot) it declines.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from services.messages import ImageBlock, TextBlock, image_block, text_block
from services.model_types import ModelError, ModelRequest, ModelResponse
from services.usage import Usage

AskYesNo = Callable[[str], Awaitable[bool]]
AskText = Callable[[str], Awaitable[str | None]]  # None: the user cancelled
Notify = Callable[[str], None]
MAX_SAMPLING_TOKENS = 8192


def _sampling_messages(params: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in params.messages:
        items = m.content if isinstance(m.content, list) else [m.content]
        blocks: list[TextBlock | ImageBlock] = []
        for c in items:
            kind = getattr(c, "type", "")
            if kind == "text":
                blocks.append(text_block(c.text))
            elif kind == "image" and m.role == "user":
                blocks.append(image_block(c.mimeType, c.data))
            else:
                blocks.append(text_block(f"[{kind} content omitted]"))
        if out and out[-1]["role"] == m.role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": m.role, "content": blocks})
    return out


def make_sampling_handler(engine: Any, ask: AskYesNo | None, notify: Notify) -> Callable[[str, Any], Awaitable[Any]]:
    async def sample(server: str, params: Any) -> Any:
        from mcp.types import CreateMessageResult, ErrorData, TextContent

        preview = " ".join(
            (getattr(m.content, "text", "") if not isinstance(m.content, list) else "") for m in params.messages
        ).strip()
        preview = preview if len(preview) <= 200 else preview[:199] + "…"
        question = f'MCP server "{server}" asks the model to answer: {preview!r} (up to {params.maxTokens} tokens). Allow?'
        if ask is None:
            if getattr(engine.gate, "mode", "") != "bypassPermissions":
                notify(f'Declined a sampling request from MCP server "{server}" (nobody to ask in this run).')
                return ErrorData(code=-1, message="User rejected sampling request")
        elif not await ask(question):
            return ErrorData(code=-1, message="User rejected sampling request")
        model = engine.config.model
        request = ModelRequest(
            messages=_sampling_messages(params),
            system=params.systemPrompt or "",
            tools=[],
            model=model,
            max_tokens=max(1, min(int(params.maxTokens or 1024), MAX_SAMPLING_TOKENS)),
        )
        response: ModelResponse | None = None
        try:
            async for event in engine.deps.call_model(request):
                if isinstance(event, ModelResponse):
                    response = event
        except ModelError as exc:
            return ErrorData(code=-1, message=f"Model call failed: {exc}")
        if response is None:
            return ErrorData(code=-1, message="The model returned nothing")
        usage = response.message.get("usage") or {}
        engine.usage.add(usage)
        one = Usage()
        one.add(usage)
        notify(f'MCP sampling for "{server}": {one.input_tokens} in / {one.output_tokens} out tokens, '
               f"${one.cost(model):.4f}")
        text = "".join(b["text"] for b in response.message["content"] if b["type"] == "text")
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text=text), model=model,
                                   stopReason="endTurn")

    return sample


def _field_question(name: str, prop: dict[str, Any], required: bool) -> str:
    title = prop.get("title") or name
    desc = f" — {prop['description']}" if prop.get("description") else ""
    kind = prop.get("type", "string")
    choices = prop.get("enum") or (prop.get("items") or {}).get("enum")
    many = " (comma-separated)" if kind == "array" else ""
    hint = f" [{' / '.join(map(str, choices))}]{many}" if choices else ("" if kind == "string" else f" ({kind})")
    default = f" (default {prop['default']})" if "default" in prop else ""
    return f"{title}{desc}{hint}{default}{'' if required else ' (optional)'}: "


def _convert(raw: str, prop: dict[str, Any]) -> Any:
    kind = prop.get("type", "string")
    if kind == "boolean":
        low = raw.strip().lower()
        if low in ("y", "yes", "true", "1"):
            return True
        if low in ("n", "no", "false", "0"):
            return False
        raise ValueError("answer yes or no")
    if kind == "array":  # a multiple choice: comma-separated, each one of the items' enum when given
        values = [v.strip() for v in raw.split(",") if v.strip()]
        allowed = (prop.get("items") or {}).get("enum") or [
            o.get("const") for o in (prop.get("items") or {}).get("anyOf") or [] if isinstance(o, dict)]
        bad = [v for v in values if allowed and v not in [str(a) for a in allowed]]
        if bad:
            raise ValueError(f"choose from {', '.join(map(str, allowed))}")
        return values
    if kind == "integer":
        return int(raw)
    if kind == "number":
        return float(raw)
    if prop.get("enum") and raw not in [str(c) for c in prop["enum"]]:
        raise ValueError(f"choose one of {', '.join(map(str, prop['enum']))}")
    return raw


def make_elicitation_handler(ask_text: AskText, notify: Notify) -> Callable[[str, Any], Awaitable[Any]]:
    """A form in the terminal: the server's message, then one question per field (Enter keeps a default;
    Ctrl-C cancels; an empty answer to the first question of a form with required fields declines)."""

    async def elicit(server: str, params: Any) -> Any:
        from mcp.types import ElicitResult

        if getattr(params, "mode", "form") != "form":
            notify(f'MCP server "{server}" asks you to open {getattr(params, "url", "a URL")}: {params.message}')
            return ElicitResult(action="decline")
        notify(f'MCP server "{server}" asks: {params.message}')
        schema = params.requestedSchema or {}
        props: dict[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        content: dict[str, Any] = {}
        for name, prop in props.items():
            while True:
                answer = await ask_text(_field_question(name, prop, name in required))
                if answer is None:
                    return ElicitResult(action="cancel")
                if not answer.strip():
                    if "default" in prop:
                        content[name] = prop["default"]
                        break
                    if name in required:
                        notify("Declined (a required field was left empty).")
                        return ElicitResult(action="decline")
                    break
                try:
                    content[name] = _convert(answer.strip(), prop)
                    break
                except ValueError as exc:
                    notify(f"Not accepted: {exc}")
        return ElicitResult(action="accept", content=content)

    return elicit
