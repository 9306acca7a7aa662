"""NotebookEdit: replace, insert or delete one cell of a Jupyter notebook (.ipynb), Claude Code's schema."""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path
from typing import Any

from tools import read_state
from tools.base import Tool, ToolContext, ToolError, ToolOutput, tool_use_error
from tools.fsutil import atomic_write, content_too_large

DESCRIPTION = """Replaces, inserts or deletes one cell of a Jupyter notebook (.ipynb file).

Usage:
- notebook_path is the notebook's path (absolute, or relative to the working directory). Read it first.
- cell_id names the cell (its "id", or "cell-N" for the N-th cell, 0-based).
- edit_mode "replace" (default) sets the cell's source to new_source; "insert" adds a new cell after cell_id
  (at the start without cell_id) and needs cell_type; "delete" removes the cell.
- Replacing a code cell clears its outputs and execution count."""

_INDEX_ID = re.compile(r"^cell-(\d+)$")


def _find(cells: list[dict[str, Any]], cell_id: str) -> int | None:
    for i, cell in enumerate(cells):
        if isinstance(cell, dict) and cell.get("id") == cell_id:
            return i
    m = _INDEX_ID.match(cell_id)
    if m and int(m.group(1)) < len(cells):
        return int(m.group(1))
    return None


def _new_cell(cell_type: str, source: str, with_id: bool) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": cell_type, "metadata": {}, "source": source}
    if with_id:
        cell["id"] = secrets.token_hex(4)
    if cell_type == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    return cell


class NotebookEditTool(Tool):
    name = "NotebookEdit"
    description = DESCRIPTION
    input_schema = {
        "type": "object",
        "properties": {
            "notebook_path": {"type": "string", "description": "The notebook to edit (absolute, or relative to the working directory)."},
            "cell_id": {"type": "string", "description": "The cell to edit; for insert, the cell to insert after (omit to insert at the start)."},
            "new_source": {"type": "string", "description": "The new source of the cell."},
            "cell_type": {"type": "string", "enum": ["code", "markdown"], "description": "The cell's type; required for insert."},
            "edit_mode": {"type": "string", "enum": ["replace", "insert", "delete"], "description": "replace (default), insert or delete."},
        },
        "required": ["notebook_path", "new_source"],
        "additionalProperties": False,
    }
    max_result_chars = 10_000

    def permission_target(self, input: dict[str, Any]) -> tuple[str, str] | None:
        path = input.get("notebook_path")
        return ("path", path) if isinstance(path, str) else None

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        raw, source = input["notebook_path"], input["new_source"]
        mode = input.get("edit_mode") or "replace"
        cell_id = input.get("cell_id")
        cell_type = input.get("cell_type")
        path = ctx.resolve(raw)
        if path.suffix != ".ipynb":
            raise ToolError(tool_use_error(
                "File must be a Jupyter notebook (.ipynb file). For editing other file types, use the Edit tool."))
        too_large = content_too_large(source, "new_source")
        if too_large:
            raise ToolError(tool_use_error(too_large))
        if not path.is_file():
            raise ToolError(tool_use_error(f"Notebook file does not exist: {path}"))
        refusal = read_state.require_fresh(ctx, path, "edit")
        if refusal:
            raise ToolError(tool_use_error(refusal))
        if mode == "insert" and cell_type is None:
            raise ToolError(tool_use_error("Cell type is required when using edit_mode=insert."))
        nb, cells = _load_cells(path)
        index = _cell_index(cells, cell_id, mode)
        if mode == "delete":
            assert index is not None
            cells.pop(index)
            message = f"Deleted cell {cell_id}"
        elif mode == "insert":
            with_id = (nb.get("nbformat", 4), nb.get("nbformat_minor", 0)) >= (4, 5)
            cell = _new_cell(str(cell_type), source, with_id)
            at = 0 if index is None else index + 1
            cells.insert(at, cell)
            message = f"Inserted cell {cell.get('id', f'cell-{at}')} with {source}"
        else:
            assert index is not None
            _replace_cell(cells[index], source, cell_type)
            message = f"Updated cell {cell_id} with {source}"
        try:
            atomic_write(path, (json.dumps(nb, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))
        except OSError as exc:
            raise ToolError(f"Cannot write {path}: {exc.strerror or exc}. Check the path and permissions.") from None
        read_state.record(ctx, path, offset=None, limit=None, from_read=False)
        return ToolOutput(message, summary=mode)


def _load_cells(path: Path) -> tuple[dict[str, Any], list[Any]]:
    """The notebook and its (mutable) cells list."""
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ToolError(tool_use_error(f"Notebook is not valid JSON: {exc}")) from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise ToolError(tool_use_error("Notebook has no cells list; it is not a Jupyter notebook."))
    return nb, cells


def _cell_index(cells: list[Any], cell_id: str | None, mode: str) -> int | None:
    """The index of `cell_id`; None only for an insert at the top."""
    if cell_id is None:
        if mode != "insert":
            raise ToolError(tool_use_error("cell_id is required to replace or delete a cell."))
        return None
    index = _find(cells, cell_id)
    if index is None:
        raise ToolError(tool_use_error(f'Cell with ID "{cell_id}" not found in notebook.'))
    return index


def _replace_cell(cell: dict[str, Any], source: str, cell_type: str | None) -> None:
    cell["source"] = source
    if cell_type and cell_type != cell.get("cell_type"):
        cell["cell_type"] = cell_type
    if cell.get("cell_type") == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    else:
        cell.pop("outputs", None)
        cell.pop("execution_count", None)
