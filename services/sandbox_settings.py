"""Claude Code's `sandbox` settings block, merged across scopes with one rule: only the user's own
scopes (user, `--settings`) and a trusted folder's files may loosen the sandbox; an untrusted folder's
files may only tighten it, and a tightening value from the user's scopes holds against any project file.

Recorded from Claude Code 2.1.332 (its settings schema and `claude sandbox status` on this machine, where
it reports `"autoAllowBashIfSandboxed": false, "autoAllowBashIfSandboxedSource": "default"`): hooks run
outside the sandbox (only its remote-tools project hooks are wrapped); `!` in its REPL runs with
`dangerouslyDisableSandbox: true`; `network.allowUnixSockets` and `allowLocalBinding` are macOS-only
(ignored on Linux, as here); project settings cannot loosen `allowUnsandboxedCommands` once managed,
`--settings` or user settings set it false. Keys and defaults:
  enabled (default here: on where bubblewrap works; Claude Code: false), failIfUnavailable (false),
  autoAllowBashIfSandboxed (default here: true; Claude Code 2.1.332 documents false), excludedCommands,
  allowUnsandboxedCommands (true), network.{allowedDomains, deniedDomains, allowUnixSockets,
  allowAllUnixSockets, allowLocalBinding}, filesystem.{allowWrite, denyWrite, denyRead, allowRead}.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# (key, the value that tightens): a scope that may only tighten can set only that value.
_BOOLS = {
    "enabled": ("enabled", True),
    "failIfUnavailable": ("fail_if_unavailable", True),
    "autoAllowBashIfSandboxed": ("auto_allow", False),
    "allowUnsandboxedCommands": ("allow_unsandboxed", False),
}
_NETWORK_BOOLS = {"allowAllUnixSockets": "allow_all_unix_sockets", "allowLocalBinding": "allow_local_binding"}
# Lists that loosen (dropped from an untrusted folder) and lists that tighten (always kept).
_LOOSE_LISTS = {("network", "allowedDomains"): "allowed_domains", ("network", "allowUnixSockets"): "allow_unix_sockets",
                ("filesystem", "allowWrite"): "allow_write", ("filesystem", "allowRead"): "allow_read",
                (None, "excludedCommands"): "excluded_commands"}
_TIGHT_LISTS = {("network", "deniedDomains"): "denied_domains", ("filesystem", "denyWrite"): "deny_write",
                ("filesystem", "denyRead"): "deny_read"}


@dataclass
class SandboxSettings:
    enabled: bool | None = None
    fail_if_unavailable: bool | None = None
    auto_allow: bool | None = None
    allow_unsandboxed: bool | None = None
    excluded_commands: list[str] = field(default_factory=list)
    allowed_domains: list[str] = field(default_factory=list)
    denied_domains: list[str] = field(default_factory=list)
    allow_unix_sockets: list[str] = field(default_factory=list)
    allow_all_unix_sockets: bool | None = None
    allow_local_binding: bool | None = None
    allow_write: list[str] = field(default_factory=list)
    deny_write: list[str] = field(default_factory=list)
    deny_read: list[str] = field(default_factory=list)
    allow_read: list[str] = field(default_factory=list)
    # Attributes whose tightening value the user's own scopes set: a project file cannot undo it.
    held: set[str] = field(default_factory=set)


def _set_bool(out: SandboxSettings, attr: str, value: bool, tight: bool, user_scope: bool, restricted: bool,
              ignored: list[str], name: str) -> None:
    if value != tight and (restricted or (attr in out.held and not user_scope)):
        ignored.append(f"sandbox.{name}: {str(value).lower()}")
        return
    setattr(out, attr, value)
    if user_scope and value == tight:
        out.held.add(attr)
    elif user_scope:
        out.held.discard(attr)


def _section(raw: dict[str, Any], name: str | None, where: str, warnings: list[str]) -> dict[str, Any]:
    if name is None:
        return raw
    sub = raw.get(name)
    if sub is None:
        return {}
    if not isinstance(sub, dict):
        warnings.append(f"{where}.{name}: must be an object; ignored")
        return {}
    return sub


def _lists(out: SandboxSettings, raw: dict[str, Any], where: str, restricted: bool, warnings: list[str],
           ignored: list[str]) -> None:
    for table, loose in ((_LOOSE_LISTS, True), (_TIGHT_LISTS, False)):
        for (section, key), attr in table.items():
            sub = _section(raw, section, where, warnings)
            if key not in sub:
                continue
            value = sub[key]
            name = f"{section}.{key}" if section else key
            if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                warnings.append(f"{where}.{name}: must be a list of strings; ignored")
            elif loose and restricted:
                if value:
                    ignored.append(f"sandbox.{name}")
            else:
                getattr(out, attr).extend(v for v in value if v not in getattr(out, attr))


def merge_sandbox(out: SandboxSettings, raw: Any, *, scope: str, restricted: bool, src: str,
                  warnings: list[str], ignored: list[str]) -> None:
    """Fold one file's `sandbox` block into `out`. `restricted`: an untrusted folder's file."""
    where = f"settings {src}: field 'sandbox"
    if not isinstance(raw, dict):
        warnings.append(f"{where}': must be an object; ignored")
        return
    user_scope = scope in ("user", "flags")
    for key, (attr, tight) in _BOOLS.items():
        if key in raw:
            if isinstance(raw[key], bool):
                _set_bool(out, attr, raw[key], tight, user_scope, restricted, ignored, key)
            else:
                warnings.append(f"{where}.{key}': must be true or false; ignored")
    network = _section(raw, "network", where, warnings)
    for key, attr in _NETWORK_BOOLS.items():
        if key in network:
            if not isinstance(network[key], bool):
                warnings.append(f"{where}.network.{key}': must be true or false; ignored")
            else:
                _set_bool(out, attr, network[key], False, user_scope, restricted, ignored, f"network.{key}")
    _lists(out, raw, where + "'", restricted, warnings, ignored)
