"""NotebookEdit on real .ipynb files, and Read's PDF pages on a real PDF (written by pypdf)."""

from __future__ import annotations

import json
from pathlib import Path

import pypdf
import pytest
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from tools.base import SessionState, ToolContext, ToolError
from tools.notebook_edit import NotebookEditTool
from tools.read import ReadTool


def _notebook(path: Path, minor: int = 5) -> None:
    cells = [{"cell_type": "code", "id": "c1", "metadata": {}, "execution_count": 3,
              "outputs": [{"output_type": "stream", "name": "stdout", "text": ["1\n"]}], "source": ["print(1)\n"]},
             {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": "# Title"}]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": minor}))


async def _call(tool, ctx, **input):
    try:
        return await tool.call(input, ctx.for_call("toolu_x"))
    except ToolError as exc:
        return str(exc)


@pytest.fixture
def nbctx(workdir: Path) -> ToolContext:
    return ToolContext(session=SessionState(cwd=workdir), project_root=workdir)


async def test_replace_insert_delete(workdir: Path, nbctx) -> None:
    nb = workdir / "nb.ipynb"
    _notebook(nb)
    tool = NotebookEditTool()
    refused = await _call(tool, nbctx, notebook_path="nb.ipynb", cell_id="c1", new_source="print(2)")
    assert refused == "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>"
    await ReadTool().call({"file_path": "nb.ipynb"}, nbctx.for_call("toolu_r"))
    out = await tool.call({"notebook_path": str(nb), "cell_id": "c1", "new_source": "print(2)"}, nbctx)
    assert out.content == "Updated cell c1 with print(2)"  # Claude Code's words
    cell = json.loads(nb.read_text())["cells"][0]
    assert cell["source"] == "print(2)" and cell["outputs"] == [] and cell["execution_count"] is None
    out = await tool.call({"notebook_path": "nb.ipynb", "cell_id": "c1", "new_source": "x = 1",
                           "edit_mode": "insert", "cell_type": "code"}, nbctx)
    cells = json.loads(nb.read_text())["cells"]
    assert [c["source"] for c in cells] == ["print(2)", "x = 1", "# Title"] and cells[1]["id"] in out.content
    out = await tool.call({"notebook_path": "nb.ipynb", "cell_id": "cell-2", "new_source": "",
                           "edit_mode": "delete"}, nbctx)
    assert out.content == "Deleted cell cell-2"
    assert [c["source"] for c in json.loads(nb.read_text())["cells"]] == ["print(2)", "x = 1"]


async def test_refusals_on_hostile_input(workdir: Path, nbctx) -> None:
    tool = NotebookEditTool()
    (workdir / "a.py").write_text("x = 1\n")
    assert "Jupyter notebook" in await _call(tool, nbctx, notebook_path="a.py", new_source="y")
    bad = workdir / "bad.ipynb"
    bad.write_text("{not json")
    await ReadTool().call({"file_path": "bad.ipynb"}, nbctx.for_call("toolu_r"))
    assert "not valid JSON" in await _call(tool, nbctx, notebook_path="bad.ipynb", cell_id="c1", new_source="y")
    nb = workdir / "nb.ipynb"
    _notebook(nb)
    await ReadTool().call({"file_path": "nb.ipynb"}, nbctx.for_call("toolu_r2"))
    assert await _call(tool, nbctx, notebook_path="nb.ipynb", cell_id="nope", new_source="y") == (
        '<tool_use_error>Cell with ID "nope" not found in notebook.</tool_use_error>')
    assert "Cell type is required" in await _call(tool, nbctx, notebook_path="nb.ipynb", new_source="y",
                                                  edit_mode="insert")
    assert "100 KB" in await _call(tool, nbctx, notebook_path="nb.ipynb", cell_id="c1", new_source="z" * 200_000)
    assert json.loads(nb.read_text())["cells"][0]["source"] == ["print(1)\n"]  # nothing changed


def _pdf(path: Path, pages: int) -> None:
    writer = pypdf.PdfWriter()
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica")})
    for i in range(1, pages + 1):
        page = writer.add_blank_page(width=300, height=200)
        stream = DecodedStreamObject()
        stream.set_data(f"BT /F1 12 Tf 20 100 Td (page number {i}) Tj ET".encode())
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})})
    with open(path, "wb") as f:
        writer.write(f)


async def test_pdf_pages(workdir: Path, nbctx) -> None:
    _pdf(workdir / "doc.pdf", 3)
    read = ReadTool()
    out = await read.call({"file_path": "doc.pdf"}, nbctx)
    assert "--- Page 1 of 3 ---\npage number 1" in out.content and "page number 3" in out.content
    out = await read.call({"file_path": "doc.pdf", "pages": "2"}, nbctx)
    assert "page number 2" in out.content and "page number 1" not in out.content
    out = await read.call({"file_path": "doc.pdf", "pages": "2-3"}, nbctx)
    assert "page number 2" in out.content and "page number 3" in out.content
    for bad in ("0", "3-1", "x", "9"):
        with pytest.raises(ToolError):
            await read.call({"file_path": "doc.pdf", "pages": bad}, nbctx)
    _pdf(workdir / "long.pdf", 25)
    with pytest.raises(ToolError, match="25 pages"):
        await read.call({"file_path": "long.pdf"}, nbctx)
    with pytest.raises(ToolError, match="at most 20"):
        await read.call({"file_path": "long.pdf", "pages": "1-21"}, nbctx)
    (workdir / "broken.pdf").write_bytes(b"%PDF-1.4\n garbage")
    with pytest.raises(ToolError, match="Cannot read the PDF"):
        await read.call({"file_path": "broken.pdf"}, nbctx)
