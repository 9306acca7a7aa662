"""Input latency in a real pseudo-terminal: the time from a keystroke written to the REPL's terminal to its echo
coming back, at an idle prompt and while a turn streams 1,000 lines of Markdown (paragraphs, then one fenced
code block that stays open the whole time), side by side with a bare prompt-toolkit prompt as the floor.
Target: under one frame (16 ms) at the 95th percentile while streaming.

The echo is the first output byte sequence holding the typed key (an upper-case `Z`, which the streamed text
never contains); a Backspace then empties the input again so that no later redraw repeats an old `Z`. The
emulated screen (pyte) answers the terminal's cursor-position requests, as a real terminal does.
`python bench/bench_keystroke.py [--lines N] [--samples N]`.
"""

from __future__ import annotations

import argparse
import os
import select
import statistics
import sys
import tempfile
import time

from common import ROOT, header, table

KEY = "bench-key-sk-ant-0000000000"
FRAME_MS = 16.0


class Term:
    """A child on a pty whose output is read by hand (no pexpect loop in the measured path)."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str):
        import pexpect
        import pyte

        self.child = pexpect.spawn(argv[0], argv[1:], env=env, cwd=cwd, dimensions=(40, 120), encoding=None)
        self.screen = pyte.Screen(120, 40)
        self.stream = pyte.ByteStream(self.screen)
        self.screen.write_process_input = lambda s: self.child.send(s.encode())
        self.fd = self.child.child_fd
        self.tail = b""  # the last bytes read, so a text split across two reads is still found

    def read(self, timeout: float, feed: bool = True) -> bytes:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return b""
        try:
            data = os.read(self.fd, 65536)
        except OSError:
            return b""
        if feed:
            self.stream.feed(data)  # answers CPR requests
        return data

    def wait_for(self, needle: bytes, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        buf = b""
        while needle not in buf:
            if time.monotonic() > deadline:
                raise TimeoutError(f"not seen: {needle!r}")
            buf = (buf + self.read(0.05))[-65536:]

    def screen_has(self, text: str) -> bool:
        return any(text in line for line in self.screen.display)

    def wait_screen(self, text: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.screen_has(text):
            if time.monotonic() > deadline:
                raise TimeoutError(f"not on screen: {text!r}")
            self.read(0.05)

    def drain(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.read(max(0.0, end - time.monotonic()))

    def echo_ms(self) -> float:
        """One keystroke: `Z` in, wait for it to come back; then Backspace it away."""
        t0 = time.perf_counter()
        os.write(self.fd, b"Z")
        chunks = []
        while True:
            data = self.read(5.0, feed=False)  # the emulator's own time is not the REPL's: fed afterwards
            chunks.append(data)
            if b"Z" in data:
                ms = (time.perf_counter() - t0) * 1000
                break
            if time.perf_counter() - t0 > 10:
                raise TimeoutError("no echo in 10 s")
        self.stream.feed(b"".join(chunks))
        os.write(self.fd, b"\x7f")
        return ms

    def close(self) -> None:
        self.child.close(force=True)


def streamed_reply(lines: int, kind: str) -> str:
    rows = [f"line {i:04d} of the streamed answer, with `code`, **bold** and a [link](https://example.com)"
            for i in range(lines)]
    if kind == "code":
        return "Here is the file:\n\n```python\n" + "\n".join(f"x_{i} = {i}  # {r}" for i, r in enumerate(rows)) \
            + "\n```\n\nEND OF STREAM code"
    paragraphs = ["\n".join(rows[i:i + 10]) for i in range(0, lines, 10)]
    return "\n\n".join(paragraphs) + "\n\nEND OF STREAM paragraphs"


def sample(term: Term, samples: int, until: str | None = None) -> list[float]:
    """Keystroke latencies, `samples` of them, or as many as fit until `until` is on the screen."""
    out: list[float] = []
    while len(out) < samples:
        if until is not None and term.screen_has(until):
            break
        out.append(term.echo_ms())
        term.drain(0.02)  # a person types about 10 keys a second; this is faster, so a worse case
    return out


def stats(ms: list[float]) -> tuple[float, float, float]:
    if not ms:
        return (float("nan"),) * 3
    ordered = sorted(ms)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95, ordered[-1]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=1000, help="lines of Markdown streamed per turn")
    ap.add_argument("--samples", type=int, default=60, help="keystrokes at the idle prompts")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.fake_anthropic import FakeAnthropic

    header(f"Keystroke to echo in a pty: idle, and while {args.lines} lines stream (target < {FRAME_MS:.0f} ms)")
    results: list[tuple[str, list[float], str]] = []
    tmp = tempfile.mkdtemp(prefix="bench-keys-")
    home, cwd = os.path.join(tmp, "home"), os.path.join(tmp, "project")
    os.makedirs(home)
    os.makedirs(cwd)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "API_", "TRACE"))}
    env.update(AGENT_HOME=home, PYTHONPATH=str(ROOT), TERM="xterm-256color", ANTHROPIC_API_KEY=KEY)

    floor = Term([sys.executable, "-c", "from prompt_toolkit import prompt; prompt('> ')"], env, cwd)
    try:
        floor.wait_for(b"\x1b[?2004h")
        floor.drain(0.5)
        results.append(("bare prompt-toolkit prompt, idle", sample(floor, args.samples), "floor"))
    finally:
        floor.close()

    fake = FakeAnthropic()
    term = Term([sys.executable, "-m", "agent"], {**env, "ANTHROPIC_BASE_URL": fake.url}, cwd)
    try:
        term.wait_for(b"Ctrl-D exits")
        term.drain(1.0)
        results.append(("agent REPL, idle", sample(term, args.samples), ""))
        for kind, label in (("paragraphs", "paragraphs"), ("code", "one open code block")):
            # About one line per event at 4 ms apart: the stream lasts several seconds, so most keys land in it.
            fake.reply(streamed_reply(args.lines, kind), fragment=96, pace=0.004)
            os.write(term.fd, f"stream {kind}\r".encode())
            term.wait_for(b"line 0001")
            t0 = time.perf_counter()
            ms = sample(term, 10_000, until=f"END OF STREAM {kind}")
            took = time.perf_counter() - t0
            results.append((f"agent REPL, streaming {args.lines} lines: {label}", ms,
                            f"{len(ms)} keys over {took:.1f} s of streaming"))
            term.wait_screen("· /help")
            term.drain(0.5)
        os.write(term.fd, b"\x04")
        term.drain(1.0)
    finally:
        term.close()
        fake.close()

    floor_p50 = stats(results[0][1])[0]
    rows = []
    for label, ms, note in results:
        p50, p95, worst = stats(ms)
        rows.append([label, str(len(ms)), f"{p50:.1f}", f"{p95:.1f}", f"{worst:.1f}",
                     f"{p50 / floor_p50:.1f}x", f"{p95 / FRAME_MS:.2f}", note])
    table(rows, ["case", "keys", "p50 ms", "p95 ms", "max ms", "p50 / floor", "p95 / frame", "note"])
    worst_p95 = max(stats(ms)[1] for label, ms, _ in results if "streaming" in label)
    print(f"streaming p95 {worst_p95:.1f} ms: {'within' if worst_p95 < FRAME_MS else 'OVER'} one frame "
          f"({FRAME_MS:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
