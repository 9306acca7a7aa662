"""Names of commands and variables the Bash checks treat specially (one place, imported by the parser,
the wrapper reader and the rules)."""

from __future__ import annotations

SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "mksh", "yash", "ash"})
# Interpreters and privilege/indirection wrappers: "always" stores the exact command only.
INTERPRETERS = SHELLS | frozenset({
    "busybox", "python", "python2", "python3", "node", "nodejs", "deno", "bun", "perl", "ruby", "php", "lua",
    "irb", "sudo", "doas", "su", "env", "xargs", "eval", "exec", "source", ".", "command", "builtin", "nohup",
    "time", "nice", "timeout", "ssh", "osascript", "awk", "gawk", "mawk", "nawk", "sed", "find", "docker",
    "npx", "uvx", "stdbuf", "ionice", "chrt", "setsid", "strace", "ltrace", "watch", "flock", "taskset",
    "chroot", "unbuffer", "coproc", "script", "parallel",
})
# Environment prefixes that only change how output looks: `LANG=C sort` is still `sort`.
SAFE_ASSIGNMENTS = frozenset({"LANG", "LC_ALL", "LC_CTYPE", "TZ", "NO_COLOR", "FORCE_COLOR", "CI", "TERM",
                              "COLUMNS", "PYTHONUNBUFFERED", "RUST_BACKTRACE", "DEBUG"})
