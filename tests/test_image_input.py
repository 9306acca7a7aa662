"""Images in the REPL's input (agent/repl/image_input.py): pasted paths, the clipboard, placeholders, and the
request the model gets, in process and in a real terminal (pexpect + pyte, the fake API recording)."""

from __future__ import annotations

import base64
import io
import os
import stat
import sys
import threading
import time
from pathlib import Path

import pytest

from agent.repl.image_input import (
    NO_IMAGE,
    PendingImages,
    TooLarge,
    clipboard_command,
    image_blocks,
    image_paths,
    read_clipboard_image,
    read_image_file,
)
from services.images import MAX_IMAGE_SIDE
from tests.procs import pid_alive

PIL = pytest.importorskip("PIL")
from PIL import Image  # noqa: E402


def png_bytes(size: tuple[int, int] = (12, 8), color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, "PNG")
    return out.getvalue()


def write_png(path: Path, size: tuple[int, int] = (12, 8)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png_bytes(size))
    return path


def decoded(block: dict) -> Image.Image:
    assert block["type"] == "image" and block["source"]["type"] == "base64"
    return Image.open(io.BytesIO(base64.b64decode(block["source"]["data"], validate=True)))


# -- pasted paths ----------------------------------------------------------------------------------
def test_quoted_path_with_a_space(tmp_path: Path) -> None:
    p = write_png(tmp_path / "my shot.png")
    found = image_paths(f"'{p}'", tmp_path)
    assert found is not None and [f.path for f in found] == [str(p)]
    assert found[0].media_type == "image/png" and found[0].data == p.read_bytes()


def test_backslash_escaped_spaces(tmp_path: Path) -> None:
    p = write_png(tmp_path / "a b c.png")
    escaped = str(p).replace(" ", "\\ ")
    found = image_paths(escaped + "\n", tmp_path)  # some terminals end a drop with a newline
    assert found is not None and found[0].path == str(p)


def test_raw_path_with_spaces_as_some_terminals_drop_it(tmp_path: Path) -> None:
    p = write_png(tmp_path / "Screenshot 2026-01-01 at 10.00.00.png")
    found = image_paths(str(p), tmp_path)
    assert found is not None and found[0].path == str(p)


def test_file_uri_is_percent_decoded(tmp_path: Path) -> None:
    p = write_png(tmp_path / "my shot.png")
    uri = "file://" + str(p).replace(" ", "%20")
    assert image_paths(uri, tmp_path)[0].path == str(p)
    assert image_paths("file://localhost" + str(p).replace(" ", "%20"), tmp_path)[0].path == str(p)
    assert image_paths("file://otherhost" + str(p).replace(" ", "%20"), tmp_path) is None


def test_tilde_and_relative_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    write_png(home / "pic.png")
    cwd = tmp_path / "proj"
    write_png(cwd / "shots" / "rel.png")
    assert image_paths("~/pic.png", cwd)[0].path == str(home / "pic.png")
    assert image_paths("shots/rel.png", cwd)[0].path == str(cwd / "shots" / "rel.png")
    assert image_paths("./shots/../shots/rel.png", cwd)[0].path == str(cwd / "shots" / "rel.png")


def test_several_paths_keep_their_order(tmp_path: Path) -> None:
    a, b, c = (write_png(tmp_path / n) for n in ("a.png", "b b.png", "c.png"))
    text = f"{c} '{b}'\n{a}"
    found = image_paths(text, tmp_path)
    assert found is not None and [f.path for f in found] == [str(c), str(b), str(a)]


def test_text_around_a_path_stays_text(tmp_path: Path) -> None:
    p = write_png(tmp_path / "a.png")
    assert image_paths(f"look at {p}", tmp_path) is None
    assert image_paths(f"{p} {tmp_path / 'missing.png'}", tmp_path) is None
    assert image_paths("'unbalanced quote", tmp_path) is None
    assert image_paths("", tmp_path) is None
    assert image_paths("/tmp/a\x00b.png", tmp_path) is None  # hostile bytes: text, never an exception
    assert image_paths("/tmp/\ud800.png", tmp_path) is None
    assert image_paths(" ".join(["x.png"] * 5000), tmp_path) is None  # a long paste is never stat'ed word by word


def test_a_text_file_named_png_stays_text(tmp_path: Path) -> None:
    fake = tmp_path / "notes.png"
    fake.write_text("not an image at all\n")
    assert image_paths(str(fake), tmp_path) is None


def test_the_type_comes_from_the_bytes_not_the_name(tmp_path: Path) -> None:
    p = tmp_path / "really-a-png.jpg"
    p.write_bytes(png_bytes())
    assert image_paths(str(p), tmp_path)[0].media_type == "image/png"


def test_a_fifo_is_never_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    results: list[object] = []
    worker = threading.Thread(target=lambda: results.append(image_paths(str(fifo), tmp_path)), daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "reading a pasted FIFO blocked"
    assert results == [None]


def test_a_directory_and_devices_are_refused(tmp_path: Path) -> None:
    (tmp_path / "dir.png").mkdir()
    assert image_paths(str(tmp_path / "dir.png"), tmp_path) is None
    assert image_paths("/dev/zero", tmp_path) is None
    assert read_image_file("/dev/zero", tmp_path) is None
    link = tmp_path / "zero.png"
    link.symlink_to("/dev/zero")
    assert image_paths(str(link), tmp_path) is None
    proc_link = tmp_path / "self.png"
    proc_link.symlink_to("/proc/self/environ")
    assert image_paths(str(proc_link), tmp_path) is None


def test_a_symlink_to_an_image_is_read_at_its_real_path(tmp_path: Path) -> None:
    real = write_png(tmp_path / "real.png")
    (tmp_path / "link.png").symlink_to(real)
    assert image_paths(str(tmp_path / "link.png"), tmp_path)[0].path == str(real)


def test_an_image_over_the_cap_is_refused(tmp_path: Path) -> None:
    p = write_png(tmp_path / "big.png")
    with pytest.raises(TooLarge):
        image_paths(str(p), tmp_path, cap=16)


def test_a_huge_png_is_scaled_down_by_fit_image(tmp_path: Path) -> None:
    p = tmp_path / "huge.png"
    Image.linear_gradient("L").resize((4800, 3000)).convert("RGB").save(p)
    found = image_paths(str(p), tmp_path)
    registry = PendingImages()
    mark = registry.add(found[0].media_type, found[0].data, found[0].path)
    blocks, notes = image_blocks(registry.take(mark))
    assert notes == [] and len(blocks) == 1
    img = decoded(blocks[0])
    assert max(img.size) <= MAX_IMAGE_SIDE and img.size[0] > img.size[1]
    assert blocks[0]["source"]["media_type"] == {"PNG": "image/png", "JPEG": "image/jpeg"}[img.format]


def test_a_corrupt_png_is_a_one_line_note_and_not_sent(tmp_path: Path) -> None:
    p = tmp_path / "broken.png"
    p.write_bytes(png_bytes()[:16] + b"\x00garbage" * 50)
    found = image_paths(str(p), tmp_path)
    assert found is not None  # named and marked as a PNG: taken; decoding decides at send time
    registry = PendingImages()
    good = registry.add("image/png", png_bytes(), "clipboard")
    bad = registry.add(found[0].media_type, found[0].data, found[0].path)
    blocks, notes = image_blocks(registry.take(f"{bad} {good}"))
    assert len(blocks) == 1 and decoded(blocks[0]).size == (12, 8)
    assert len(notes) == 1 and "\n" not in notes[0] and notes[0].startswith("[Image #2] was not sent: ")


# -- placeholders ----------------------------------------------------------------------------------
def test_placeholders_choose_the_images_in_their_order() -> None:
    reg = PendingImages()
    one, two, three = (reg.add("image/png", bytes([i]), "clipboard") for i in range(3))
    assert (one, two, three) == ("[Image #1]", "[Image #2]", "[Image #3]")
    taken = reg.take(f"compare {three} with {one} and {three} again")
    assert [i.number for i in taken] == [3, 1]  # placeholder order, each image once
    assert reg.take(f"{one} {three}") == []  # already taken
    assert len(reg) == 1


def test_a_deleted_placeholder_drops_its_image() -> None:
    reg = PendingImages()
    reg.add("image/png", b"a", "clipboard")
    kept = reg.add("image/png", b"b", "clipboard")
    reg.prune([f"only {kept} now", ""])
    assert [i.number for i in reg.take("[Image #1] [Image #2]")] == [2]


def test_numbers_grow_across_lines() -> None:
    reg = PendingImages()
    first = reg.add("image/png", b"a", "clipboard")
    reg.take(first)
    assert reg.add("image/png", b"b", "clipboard") == "[Image #2]"  # a queued line's #1 is never reused


# -- the clipboard ---------------------------------------------------------------------------------
def fake_tool(bin_dir: Path, name: str, body: str) -> Path:
    bin_dir.mkdir(parents=True, exist_ok=True)
    tool = bin_dir / name
    tool.write_text("#!/bin/sh\n" + body)
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return tool


def clip_env(bin_dir: Path, **extra: str) -> dict[str, str]:
    return {"PATH": f"{bin_dir}:{os.environ.get('PATH', '')}", **extra}


def test_clipboard_png_from_xclip(tmp_path: Path) -> None:
    image = tmp_path / "clip.png"
    image.write_bytes(png_bytes((5, 4)))
    fake_tool(tmp_path / "bin", "xclip", f'[ "$*" = "-selection clipboard -t image/png -o" ] || exit 9\n'
                                         f"cat '{image}'\n")
    got = read_clipboard_image(clip_env(tmp_path / "bin"), platform="linux")
    assert not isinstance(got, str), got
    assert got.media_type == "image/png" and got.data == image.read_bytes()


def test_clipboard_without_an_image(tmp_path: Path) -> None:
    fake_tool(tmp_path / "bin", "xclip", "echo 'Error: target image/png not available' >&2\nexit 1\n")
    got = read_clipboard_image(clip_env(tmp_path / "bin"), platform="linux")
    assert got == f"{NO_IMAGE} (xclip: Error: target image/png not available)"
    fake_tool(tmp_path / "bin2", "xclip", "exit 0\n")  # nothing at all
    assert read_clipboard_image(clip_env(tmp_path / "bin2"), platform="linux") == NO_IMAGE
    fake_tool(tmp_path / "bin3", "xclip", "echo just some text\n")  # not an image
    assert read_clipboard_image(clip_env(tmp_path / "bin3"), platform="linux") == NO_IMAGE


def test_a_clipboard_tool_that_hangs_times_out_and_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "sleep.pid"
    fake_tool(tmp_path / "bin", "xclip", f"sleep 300 &\necho $! > '{pid_file}'\nwait\n")
    got = read_clipboard_image(clip_env(tmp_path / "bin"), platform="linux", timeout=1.0)
    assert isinstance(got, str) and got.startswith("xclip did not answer within 1 s")
    pid = int(pid_file.read_text())
    for _ in range(100):
        if not pid_alive(pid):
            break
        time.sleep(0.05)
    assert not pid_alive(pid), "the clipboard tool's child survived the timeout"


def test_a_clipboard_image_over_the_cap_is_cut_off(tmp_path: Path) -> None:
    fake_tool(tmp_path / "bin", "xclip", "printf '\\211PNG\\r\\n\\032\\n'\nexec cat /dev/zero\n")
    got = read_clipboard_image(clip_env(tmp_path / "bin"), platform="linux", cap=1 << 20)
    assert got == "The clipboard image is over 1 MB: not pasted"


def test_no_clipboard_tool(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    env = {"PATH": str(tmp_path / "empty")}
    assert read_clipboard_image(env, platform="linux") == "Pasting an image needs xclip or wl-paste"
    assert read_clipboard_image(env, platform="darwin").startswith("Pasting an image needs pngpaste")


def test_wayland_prefers_wl_paste(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    fake_tool(bin_dir, "xclip", "exit 1\n")
    fake_tool(bin_dir, "wl-paste", "exit 1\n")
    assert Path(clipboard_command(clip_env(bin_dir, WAYLAND_DISPLAY="wayland-0"))[0]).name == "wl-paste"
    assert Path(clipboard_command(clip_env(bin_dir))[0]).name == "xclip"


# -- the message sent ------------------------------------------------------------------------------
def test_the_engine_sends_text_then_images(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from agent.loop.deps import QueryDeps
    from agent.loop.factory import AppOptions, build_engine
    from agent.model.scripted import ScriptedModel, reply
    from services.config import Settings
    from services.session import load_transcript

    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    (tmp_path / "proj").mkdir()
    model = ScriptedModel([reply("A red square.")])
    opts = AppOptions(cwd=tmp_path / "proj", settings=Settings(model="claude-sonnet-4-5"), trusted=True)
    engine = build_engine(opts, deps=QueryDeps(call_model=model))
    reg = PendingImages()
    mark = reg.add("image/png", png_bytes(), "clipboard")
    blocks, _ = image_blocks(reg.take(mark))

    async def run() -> None:
        async for _ in engine.run_turn(f"{mark} what is this?", images=blocks):
            pass

    asyncio.run(run())
    engine.close()
    sent = model.requests[0].messages[-1]["content"]
    assert [b["type"] for b in sent] == ["text", "image"] and sent[0]["text"] == "[Image #1] what is this?"
    stored = load_transcript(engine.paths.transcript).messages[0]
    assert stored["content"] == sent and "meta" not in stored  # the user's own message, image kept


def test_a_prompt_with_images_is_the_users_own_message() -> None:
    """Retain and autocompact keep the user's own messages (the task first): a prompt with a pasted image is
    one, and a safe place for a kept tail to start."""
    from services.compact.retain import head_indices, is_user_own
    from services.messages import image_block, text_block, tool_result_block, user_message

    prompt = user_message([text_block("[Image #1] fix this layout"), image_block("image/png", "iVBORw0KGgo=")])
    assert is_user_own(prompt)
    assert head_indices([user_message("note", meta={"origin": "hook"}), prompt]) == (1,)
    assert not is_user_own(user_message([image_block("image/png", "iVBORw0KGgo=")]))  # no words: not a prompt
    assert not is_user_own(user_message([tool_result_block("t1", "x"), text_block("y")]))


# -- a real terminal -------------------------------------------------------------------------------
pexpect = pytest.importorskip("pexpect")
from tests.test_repl_pty import finish, spawn, wait_screen  # noqa: E402

IDLE = "· /help"
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")


def _wait_requests(fake, n: int) -> None:
    deadline = time.monotonic() + 30
    while len(fake.requests) < n and time.monotonic() < deadline:
        time.sleep(0.05)


def _prompt_blocks(request) -> list[dict]:
    return request.messages[-1]["content"]


def _assert_text_then_image(blocks: list[dict], text: str, size: tuple[int, int]) -> None:
    assert [b["type"] for b in blocks] == ["text", "image"], blocks
    assert blocks[0]["text"] == text
    assert blocks[1]["source"]["media_type"] == "image/png"
    assert decoded(blocks[1]).size == size


def _answered_then_exit(child, answer: str) -> None:
    """The answer is shown, the prompt is idle again, Ctrl-D exits with 0."""
    wait_screen(child, answer)
    wait_screen(child, IDLE)
    child.send("\x04")
    assert finish(child) == 0


@posix_only
def test_terminal_a_dropped_path_becomes_an_image_then_resume_sends_it(cli, fake_anthropic) -> None:
    shot = write_png(Path(cli.cwd) / "my shot.png", (21, 13))
    fake_anthropic.text("It is a red rectangle.")
    fake_anthropic.text("Still red.")
    child = spawn(cli)
    child.send(f"{PASTE_START}'{shot}'{PASTE_END}")  # what a terminal sends for a dropped file
    wait_screen(child, "> [Image #1]")
    child.send("what is this?")
    wait_screen(child, "> [Image #1] what is this?")
    child.send("\r")
    _answered_then_exit(child, "It is a red rectangle.")
    _assert_text_then_image(_prompt_blocks(fake_anthropic.requests[0]), "[Image #1] what is this?", (21, 13))

    child = spawn(cli, "-c")  # the image is in the transcript: the resumed history is sent whole
    assert "Resumed session" in child.before
    child.send("and now?\r")
    _answered_then_exit(child, "Still red.")
    sent = fake_anthropic.requests[1].messages
    _assert_text_then_image(sent[0]["content"], "[Image #1] what is this?", (21, 13))
    assert sent[-1]["content"][-1]["text"] == "and now?"


@posix_only
def test_terminal_ctrl_v_pastes_the_clipboard_image(cli, fake_anthropic, tmp_path: Path) -> None:
    clip = tmp_path / "clip.png"
    clip.write_bytes(png_bytes((9, 7)))
    mode = tmp_path / "mode"
    mode.write_text("none")
    fake_tool(tmp_path / "bin", "xclip",
              f"[ \"$(cat '{mode}')\" = image ] && exec cat '{clip}'\n"
              "echo 'Error: target image/png not available' >&2\nexit 1\n")
    fake_anthropic.text("A small red image.")
    child = spawn(cli, PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}", WAYLAND_DISPLAY=None)
    child.send("\x16")  # Ctrl-V with no image on the clipboard: a note, nothing inserted
    wait_screen(child, "No image on the clipboard (xclip: Error: target image/png not available)")
    mode.write_text("image")
    child.send("look: ")
    child.send("\x16")
    wait_screen(child, "> look: [Image #1]")
    child.send("thoughts?\r")
    _answered_then_exit(child, "A small red image.")
    _assert_text_then_image(_prompt_blocks(fake_anthropic.requests[0]), "look: [Image #1] thoughts?", (9, 7))


@posix_only
def test_terminal_a_queued_line_keeps_its_image_and_text_pastes_stay_text(cli, fake_anthropic) -> None:
    shot = write_png(Path(cli.cwd) / "queued.png", (6, 5))
    notes = Path(cli.cwd) / "notes.png"
    notes.write_text("not an image\n")
    gate = threading.Event()
    fake_anthropic.reply("Working on the first one", gate=gate, fragment=1000)
    fake_anthropic.text("Saw the image.")
    child = spawn(cli)
    try:
        child.send("first\r")
        wait_screen(child, "Working on the first one")
        child.send(f"{PASTE_START}{shot}{PASTE_END}")
        wait_screen(child, "> [Image #1]")
        child.send(f"and {PASTE_START}{notes}{PASTE_END}")  # named .png, but text: pasted as it is
        wait_screen(child, f"> [Image #1] and {notes}")
        child.send("\r")  # queued while the first turn runs
        wait_screen(child, "queued: [Image #1] and")
        gate.set()
        _answered_then_exit(child, "Saw the image.")
    finally:
        gate.set()
    _wait_requests(fake_anthropic, 2)
    _assert_text_then_image(_prompt_blocks(fake_anthropic.requests[1]), f"[Image #1] and {notes}", (6, 5))
