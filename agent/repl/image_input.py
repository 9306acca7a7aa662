"""Images in the REPL's input, Claude Code's way: Ctrl-V pastes the clipboard's image, and a dropped or
pasted image file path becomes an attachment; both show as `[Image #N]` in the input box.

- `read_clipboard_image()`: `wl-paste` (Wayland) or `xclip` (X11), `pngpaste` on macOS; a child process
  with a deadline and a size cap (it never hangs the REPL, and a runaway clipboard is cut off).
- `image_paths(text, cwd)`: the images named by a pasted text, when the whole text is one or more image
  file paths (shell-quoted, backslash-escaped, `~`, `file://` URIs, relative to cwd); else None and the
  text stays text. Only regular files with an image extension *and* image magic bytes are taken; FIFOs,
  devices, directories, `/dev`, `/proc` and `/sys` (symlinks resolved first) never are, nor opened.
- `PendingImages`: the images pasted into the input, by number. A submitted line takes the ones whose
  placeholder it still holds, in placeholder order; a deleted placeholder drops its image.
- `image_blocks(images)`: the API's `image` blocks, each through `services.images.fit_image`; an image
  that cannot be made acceptable is a one-line note instead.
"""

from __future__ import annotations

import base64
import os
import re
import selectors
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from services.images import ImageError, fit_image
from services.messages import ImageBlock, image_block
from tools.fsutil import sniff_image

MAX_PASTE_BYTES = 20 * 1024 * 1024  # an image read from the clipboard or a file; fit_image shrinks it after
CLIPBOARD_TIMEOUT = 5.0  # seconds: xclip answers in milliseconds, a clipboard owner that hangs must not
MAX_PATH_PASTE_CHARS = 8192  # a longer paste is text: never stat a pasted essay word by word
MAX_PASTED_PATHS = 20
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".webp")  # Claude Code's list; the bytes decide the type
_REFUSED_ROOTS = ("/dev", "/proc", "/sys")
PLACEHOLDER = re.compile(r"\[Image #(\d+)\]")

NO_IMAGE = "No image on the clipboard"


def placeholder(number: int) -> str:
    return f"[Image #{number}]"


# -- the clipboard ---------------------------------------------------------------------------------
@dataclass
class ClipboardImage:
    media_type: str
    data: bytes


def clipboard_command(env: Mapping[str, str] | None = None, platform: str = sys.platform) -> list[str] | None:
    """The command that prints the clipboard's PNG image, or None when no such tool is installed."""
    env = os.environ if env is None else env
    path = env.get("PATH", os.defpath)
    if platform == "darwin":
        found = shutil.which("pngpaste", path=path)
        return [found, "-"] if found else None
    wl = shutil.which("wl-paste", path=path)
    xclip = shutil.which("xclip", path=path)
    if wl and (env.get("WAYLAND_DISPLAY") or not xclip):
        return [wl, "--no-newline", "--type", "image/png"]
    if xclip:
        return [xclip, "-selection", "clipboard", "-t", "image/png", "-o"]
    return None


def missing_tool_note(platform: str = sys.platform) -> str:
    return "Pasting an image needs pngpaste (brew install pngpaste)" if platform == "darwin" \
        else "Pasting an image needs xclip or wl-paste"


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # its own session: whatever it started goes too
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        pass


def run_capped(argv: list[str], *, timeout: float, cap: int, env: Mapping[str, str] | None = None
               ) -> tuple[int | None, bytes, bytes, str | None]:
    """Run `argv` with no input; (exit code, stdout, stderr head, problem). The problem is "timeout" or
    "too large" (the child is then killed, with its process group); the exit code is None then."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, env=None if env is None else dict(env))
    out: list[bytes] = []
    err = b""
    size = 0
    deadline = time.monotonic() + timeout
    sel = selectors.DefaultSelector()
    try:
        assert proc.stdout is not None and proc.stderr is not None
        sel.register(proc.stdout, selectors.EVENT_READ)
        sel.register(proc.stderr, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                _kill(proc)
                return None, b"", err, "timeout"
            for key, _ in sel.select(left):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    sel.unregister(key.fileobj)
                elif key.fileobj is proc.stdout:
                    out.append(chunk)
                    size += len(chunk)
                    if size > cap:
                        _kill(proc)
                        return None, b"", err, "too large"
                elif len(err) < 4096:
                    err += chunk
        try:
            code = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:  # closed its output but lingers
            _kill(proc)
            return None, b"", err, "timeout"
        return code, b"".join(out), err, None
    finally:
        sel.close()
        if proc.poll() is None:
            _kill(proc)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def read_clipboard_image(env: Mapping[str, str] | None = None, *, timeout: float = CLIPBOARD_TIMEOUT,
                         cap: int = MAX_PASTE_BYTES, platform: str = sys.platform) -> ClipboardImage | str:
    """The clipboard's image, or a one-line note saying why there is none. Blocking: call it in a thread."""
    from services.credentials import child_env

    env = os.environ if env is None else env
    argv = clipboard_command(env, platform)
    if argv is None:
        return missing_tool_note(platform)
    name = os.path.basename(argv[0])
    try:
        code, data, err, problem = run_capped(argv, timeout=timeout, cap=cap, env=child_env(env))
    except OSError as exc:
        return f"Could not run {name}: {exc.strerror or exc}"
    if problem == "timeout":
        return f"{name} did not answer within {timeout:g} s: no image pasted"
    if problem == "too large":
        return f"The clipboard image is over {cap // (1024 * 1024)} MB: not pasted"
    media = sniff_image(data[:16])
    if code != 0 or media is None:
        first = err.decode("utf-8", "replace").strip().splitlines()[:1]
        detail = f" ({name}: {first[0][:120]})" if code and first else ""
        return NO_IMAGE + detail
    return ClipboardImage(media, data)


# -- pasted paths ----------------------------------------------------------------------------------
@dataclass
class ImageFile:
    path: str  # the real path read
    media_type: str
    data: bytes


class TooLarge(Exception):
    pass


def _refused(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") for root in _REFUSED_ROOTS)


def local_path(token: str, cwd: Path) -> str | None:
    """The absolute path a pasted token names (`file://` URI, `~`, relative to cwd), or None."""
    if token.startswith("file://"):
        parts = urlsplit(token)
        if parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
            return None
        token = unquote(parts.path)
    if not token or "\x00" in token:
        return None
    token = os.path.expanduser(token)
    if not os.path.isabs(token):
        token = os.path.join(cwd, token)
    return os.path.normpath(token)


def read_image_file(token: str, cwd: Path, cap: int = MAX_PASTE_BYTES) -> ImageFile | None:
    """The image file `token` names, or None (not a path, not an image, not a regular file...).
    TooLarge for an image file over `cap`."""
    path = local_path(token, cwd)
    if path is None or not path.lower().endswith(IMAGE_EXTENSIONS) or _refused(path):
        return None
    try:
        real = os.path.realpath(path)
        if _refused(real):
            return None
        st = os.stat(real)
        if not stat.S_ISREG(st.st_mode):
            return None  # a FIFO is never opened (it would block), nor a device or a directory
        if st.st_size > cap:
            raise TooLarge(real)
        # Non-blocking and no symlink at the end: a FIFO or link swapped in since the stat cannot hang us.
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        fst = os.fstat(fd)
        if not stat.S_ISREG(fst.st_mode) or (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino):
            return None
        head = os.read(fd, 16)
        media = sniff_image(head)
        if media is None:
            return None  # a text file named .png stays text
        chunks = [head]
        size = len(head)
        while size <= cap:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > cap:  # it grew since the stat
            raise TooLarge(real)
        return ImageFile(real, media, b"".join(chunks))
    except OSError:
        return None
    finally:
        os.close(fd)


def _candidates(text: str) -> list[list[str]]:
    """Ways to read a paste as paths: shell words (quotes, `\\ ` escapes), the whole text, one per line."""
    out: list[list[str]] = []
    try:
        words = shlex.split(text, posix=True)
        if words:
            out.append(words)
    except ValueError:  # unbalanced quotes: not shell words
        pass
    out.append([text])  # a raw path with spaces, as some terminals drop it
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 1:
        out.append(lines)
    return out


def image_paths(text: str, cwd: Path, cap: int = MAX_PASTE_BYTES) -> list[ImageFile] | None:
    """The images, when the whole pasted text is image file paths; None when it is anything else.
    Raises TooLarge when it names an image file over `cap` (the caller says so and keeps the text)."""
    text = text.strip()
    if not text or len(text) > MAX_PATH_PASTE_CHARS:
        return None
    too_large: TooLarge | None = None
    for words in _candidates(text):
        if len(words) > MAX_PASTED_PATHS:
            continue
        # Cheap first: every word must at least be named like an image before any file is touched.
        if not all((local_path(w, cwd) or "").lower().endswith(IMAGE_EXTENSIONS) for w in words):
            continue
        images: list[ImageFile] = []
        for w in words:
            try:
                found = read_image_file(w, cwd, cap)
            except TooLarge as exc:
                too_large, found = exc, None
            if found is None:
                break
            images.append(found)
        else:
            return images
    if too_large is not None:
        raise too_large
    return None


# -- the images of the input -----------------------------------------------------------------------
@dataclass
class PendingImage:
    number: int
    media_type: str
    data: bytes
    source: str  # "clipboard" or the file's path

    @property
    def placeholder(self) -> str:
        return placeholder(self.number)


class PendingImages:
    """Images pasted into the input, waiting for the line that holds their placeholder to be sent.

    Numbers grow for the whole session, so a line queued during a turn and the next one being typed never
    share a number; an image stays here until the line holding its placeholder starts its turn (queued
    lines and lines taken back with Esc keep theirs), and is dropped once no text holds its placeholder."""

    def __init__(self) -> None:
        self._next = 1
        self._items: dict[int, PendingImage] = {}

    def __len__(self) -> int:
        return len(self._items)

    def add(self, media_type: str, data: bytes, source: str) -> str:
        image = PendingImage(self._next, media_type, data, source)
        self._items[image.number] = image
        self._next += 1
        return image.placeholder

    def take(self, text: str) -> list[PendingImage]:
        """The images whose placeholder is in `text`, in the order the placeholders come (each once)."""
        out: list[PendingImage] = []
        for match in PLACEHOLDER.finditer(text):
            image = self._items.pop(int(match.group(1)), None)
            if image is not None:
                out.append(image)
        return out

    def prune(self, texts: Iterable[str]) -> None:
        """Forget the images no text holds a placeholder of any more (deleted from the input)."""
        held = {int(m.group(1)) for t in texts for m in PLACEHOLDER.finditer(t)}
        for number in [n for n in self._items if n not in held]:
            del self._items[number]


def image_blocks(images: Iterable[PendingImage]) -> tuple[list[ImageBlock], list[str]]:
    """(image blocks, notes): each image fitted to the API's limits; one that cannot be is a note.
    CPU work (Pillow): call it in a thread."""
    blocks: list[ImageBlock] = []
    notes: list[str] = []
    for image in images:
        try:
            data, media = fit_image(image.data, image.media_type)
        except ImageError as exc:
            notes.append(f"{image.placeholder} was not sent: {exc}")
            continue
        blocks.append(image_block(media, base64.b64encode(data).decode("ascii")))
    return blocks, notes
