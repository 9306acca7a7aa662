"""Terminal notifications (pure): which channel a terminal gets and the bytes that ring it.

Claude Code 2.1.332's `preferredNotifChannel` values: `auto` (the default), `iterm2` (OSC 9),
`iterm2_with_bell` (OSC 9 and BEL), `kitty` (OSC 99), `ghostty` (OSC 777), `terminal_bell` (BEL) and
`notifications_disabled`. Its `auto` picks iTerm2, Kitty or Ghostty from the terminal and sends nothing
elsewhere; here `auto` rings the bell where no richer channel is known (tmux, screen, a plain xterm,
Apple's Terminal), since a bell is never printed as text. Inside tmux or screen an OSC sequence the
outer terminal must see is wrapped for passthrough.
"""

from __future__ import annotations

from collections.abc import Mapping

CHANNELS = ("auto", "iterm2", "iterm2_with_bell", "kitty", "ghostty", "terminal_bell", "notifications_disabled")
TITLE = "Claude Code"
BEL = "\a"
ST = "\x1b\\"
# Claude Code's messages and notification types.
PERMISSION_MESSAGE = "Claude needs your permission to use {tool}"
WAITING_MESSAGE = "Claude is waiting for your input"
PERMISSION_TYPE = "permission_prompt"
IDLE_TYPE = "idle_prompt"


def multiplexer(env: Mapping[str, str]) -> str | None:
    """"tmux" or "screen" when the agent runs inside one."""
    if env.get("TMUX"):
        return "tmux"
    if env.get("STY") or env.get("TERM", "").startswith("screen"):
        return "screen"
    return None


def resolve(setting: str | None, env: Mapping[str, str]) -> str:
    """The channel to use: the setting's, or for `auto` (and an unknown value) the terminal's."""
    if setting in CHANNELS and setting != "auto":
        return str(setting)
    program = env.get("TERM_PROGRAM", "")
    if program == "iTerm.app" or env.get("LC_TERMINAL", "").lower().startswith("iterm2"):
        return "iterm2"
    if env.get("KITTY_WINDOW_ID") or env.get("TERM") == "xterm-kitty":
        return "kitty"
    if program.lower() == "ghostty" or env.get("GHOSTTY_RESOURCES_DIR"):
        return "ghostty"
    return "terminal_bell"


def _clean(text: str) -> str:
    """Text inside an OSC sequence: no control characters (they would end or break it), no `;`."""
    return "".join(ch for ch in text if ch.isprintable()).replace(";", ",")


def _passthrough(seq: str, mux: str | None) -> str:
    if mux == "tmux":
        return "\x1bPtmux;" + seq.replace("\x1b", "\x1b\x1b") + ST
    if mux == "screen":
        return "\x1bP" + seq + ST
    return seq


def sequence(channel: str, message: str, env: Mapping[str, str], title: str = TITLE) -> str:
    """What to write to the terminal for `channel` ("" when nothing is sent)."""
    body, head = _clean(message), _clean(title)
    mux = multiplexer(env)
    if channel == "terminal_bell":
        return BEL
    if channel in ("iterm2", "iterm2_with_bell"):
        seq = _passthrough(f"\x1b]9;{body}{BEL}", mux)
        return seq + (BEL if channel == "iterm2_with_bell" else "")
    if channel == "kitty":
        parts = [f"\x1b]99;i=1:d=0:p=title;{head}{ST}", f"\x1b]99;i=1:p=body;{body}{ST}",
                 f"\x1b]99;i=1:d=1:a=focus;{ST}"]
        return "".join(_passthrough(p, mux) for p in parts)
    if channel == "ghostty":
        return _passthrough(f"\x1b]777;notify;{head};{body}{BEL}", mux)
    return ""
