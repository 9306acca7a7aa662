"""Background shells: Bash with `run_in_background`, and Claude Code's TaskOutput and TaskStop tools.

A background command runs in its own process session with stdout and stderr going to an output file in the
session's directory (`tasks/<id>.output`, 0600), so it survives the turn that started it and its output can
be Read while it runs. The registry lives in the session state; every task still running is killed when the
session ends (REPL exit, one-shot exit, a signal). Finished tasks are reported to the model once, as a
`<task-notification>` before the next prompt (the REPL), the way Claude Code re-invokes the model.

Names and words follow Claude Code 2.1 (recorded): the Bash result text, `TaskOutput` (`task_id`, `block`,
`timeout`) and `TaskStop` (`task_id`, or the older `shell_id`). The older BashOutput/KillShell names are
gone from Claude Code, so they are not offered.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.private_fs import ensure_private_dir
from tools.base import Tool, ToolContext, ToolError, ToolOutput
from tools.sandbox import Wrapped

OUTPUT_CAP_CHARS = 30_000
KILL_GRACE_S = 1.0
STARTED_TEXT = ("Command running in background with ID: {id}. Output is being written to: {path}. "
                "You will be notified when it completes. To check interim output, use Read on that file path.")


@dataclass
class BackgroundTask:
    id: str
    command: str
    output: Path
    proc: asyncio.subprocess.Process
    started: float = field(default_factory=time.monotonic)
    status: str = "running"  # running | completed | failed | killed
    exit_code: int | None = None
    notified: bool = False
    waiter: asyncio.Task[None] | None = None
    launch: Wrapped | None = None  # the sandbox's placeholders, released when the command ends

    def describe(self) -> str:
        code = "" if self.exit_code is None else f" (exit {self.exit_code})"
        return f"{self.id}  {self.status}{code}  {self.command}"


class TaskRegistry:
    """The session's background tasks, by id."""

    def __init__(self) -> None:
        self.tasks: dict[str, BackgroundTask] = {}

    async def start(self, command: str, cwd: Path, env: dict[str, str], directory: Path,
                    launch: Wrapped | None = None) -> BackgroundTask:
        ensure_private_dir(directory)
        task_id = "b" + secrets.token_hex(4)
        out_path = directory / f"{task_id}.output"
        fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        launch = launch or Wrapped(["bash", "-c", command])
        try:
            proc = await asyncio.create_subprocess_exec(
                *launch.argv, cwd=str(cwd), env=env, stdin=asyncio.subprocess.DEVNULL,
                stdout=fd, stderr=fd, start_new_session=True, pass_fds=launch.pass_fds)
        except BaseException:
            launch.release()
            raise
        finally:
            os.close(fd)
        task = BackgroundTask(task_id, command, out_path, proc, launch=launch)
        task.waiter = asyncio.ensure_future(self._wait(task))
        self.tasks[task_id] = task
        return task

    @staticmethod
    async def _wait(task: BackgroundTask) -> None:
        try:
            code = await task.proc.wait()
        finally:
            if task.launch is not None:
                task.launch.release()
        task.exit_code = code
        if task.status == "running":
            task.status = "completed" if code == 0 else "failed"

    def get(self, task_id: str) -> BackgroundTask:
        task = self.tasks.get(task_id)
        if task is None:
            known = ", ".join(self.tasks) or "none"
            raise ToolError(f"No task found with ID: {task_id} (known: {known}).")
        return task

    def stop(self, task_id: str) -> BackgroundTask:
        task = self.get(task_id)
        if task.status != "running":
            raise ToolError(f"Task {task_id} is not running (status: {task.status}).")
        task.status = "killed"
        _kill_group(task.proc.pid, signal.SIGTERM)
        asyncio.get_running_loop().call_later(KILL_GRACE_S, _kill_group, task.proc.pid, signal.SIGKILL)
        return task

    def kill_all(self) -> int:
        """Every running task's process group, at once (the session is ending)."""
        n = 0
        for task in self.tasks.values():
            if task.status == "running" and task.proc.returncode is None:
                task.status = "killed"
                _kill_group(task.proc.pid, signal.SIGKILL)
                n += 1
        return n

    def running(self) -> list[BackgroundTask]:
        return [t for t in self.tasks.values() if t.status == "running"]

    def take_notifications(self) -> list[str]:
        """`<task-notification>`s for tasks that ended since the last call, each reported once."""
        out = []
        for task in self.tasks.values():
            if task.status != "running" and not task.notified:
                task.notified = True
                out.append(f"<task-notification>\n<task-id>{task.id}</task-id>\n<status>{task.status}</status>\n"
                           f"<exit-code>{task.exit_code}</exit-code>\n<output-file>{task.output}</output-file>\n"
                           f"<summary>Background command \"{task.command}\" {task.status}</summary>\n"
                           "</task-notification>")
        return out


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def registry(ctx_or_state: Any) -> TaskRegistry:
    state = getattr(ctx_or_state, "session", ctx_or_state)
    reg = state.background_tasks
    if not isinstance(reg, TaskRegistry):
        reg = state.background_tasks = TaskRegistry()
    return reg


def tasks_dir(ctx: ToolContext) -> Path:
    base = ctx.session_dir if ctx.session_dir is not None else Path(tempfile.gettempdir()) / "agent-tasks"
    return Path(base) / "tasks"


async def start_background(command: str, ctx: ToolContext, env: dict[str, str],
                           launch: Wrapped | None = None) -> ToolOutput:
    task = await registry(ctx).start(command, Path(ctx.session.cwd), env, tasks_dir(ctx), launch)
    return ToolOutput(STARTED_TEXT.format(id=task.id, path=task.output), summary=f"background {task.id}")


def _tail(path: Path, limit: int = OUTPUT_CAP_CHARS) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit * 4))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError as exc:
        return f"[output file unreadable: {exc.strerror}]"
    if len(text) > limit:
        text = f"[… earlier output cut; the whole output is in {path}]\n" + text[-limit:]
    return text


class TaskOutputTool(Tool):
    name = "TaskOutput"
    description = ("Retrieves output from a running or completed background task (a Bash command started with "
                   "run_in_background).\n- Takes a task_id parameter identifying the task\n- Returns the task "
                   "output along with status information\n- Use block=true (default) to wait for task completion\n"
                   "- Use block=false for non-blocking check of current status\n- You can also Read the output "
                   "file path the Bash result gave")
    input_schema = {
        "type": "object",
        "properties": {
            "task_id": {"type": "string", "description": "The task ID to get output from"},
            "block": {"type": "boolean", "default": True, "description": "Whether to wait for completion"},
            "timeout": {"type": "number", "default": 30000, "minimum": 0, "maximum": 600000,
                        "description": "Max wait time in ms"},
        },
        "required": ["task_id"],
        "additionalProperties": False,
    }
    read_only = True
    max_result_chars = OUTPUT_CAP_CHARS

    def describe(self, input: dict[str, Any]) -> str:
        return f"TaskOutput {input.get('task_id', '')}".strip()

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        task = registry(ctx).get(str(input["task_id"]))
        if input.get("block", True) and task.status == "running" and task.waiter is not None:
            timeout = min(float(input.get("timeout", 30000)), 600000) / 1000
            try:
                await asyncio.wait_for(asyncio.shield(task.waiter), timeout)
            except TimeoutError:
                pass
        code = "" if task.exit_code is None else f"\n<exit_code>{task.exit_code}</exit_code>"
        return ToolOutput(f"<task_id>{task.id}</task_id>\n<status>{task.status}</status>{code}\n"
                          f"<output>\n{_tail(task.output).rstrip()}\n</output>", summary=task.status)


class TaskStopTool(Tool):
    name = "TaskStop"
    description = ("\n- Stops a running background task by its ID\n- Takes a task_id parameter identifying the task "
                   "to stop\n- Returns a success or failure status\n- Use this tool when you need to terminate a "
                   "long-running task\n")
    input_schema = {
        "type": "object",
        "properties": {
            "task_id": {"type": "string", "description": "The ID of the background task to stop"},
            "shell_id": {"type": "string", "description": "Deprecated: use task_id instead"},
        },
        "additionalProperties": False,
    }
    read_only = True  # it only stops what this session started

    def describe(self, input: dict[str, Any]) -> str:
        return f"TaskStop {input.get('task_id') or input.get('shell_id') or ''}".strip()

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        task_id = input.get("task_id") or input.get("shell_id")
        if not isinstance(task_id, str) or not task_id:
            raise ToolError("TaskStop needs task_id.")
        task = registry(ctx).stop(task_id)
        return ToolOutput(f"Successfully stopped task: {task.id} ({task.command})", summary="stopped")
