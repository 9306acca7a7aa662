"""Folder trust: a folder's own configuration counts only after the user has trusted the folder.

Records live in `$AGENT_HOME/trusted-folders.json` (0600), never in the project. Trusting a folder
trusts the folders under it, for the configuration it had when trusted (services/trust_digest.py): a
change since, or a sub-folder's own configuration never shown, is asked about again. A folder is untrusted until the REPL's question is answered yes or
`agent trust DIR` is run; one-shot runs never ask, they follow the record.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.private_fs import ensure_private_dir
from services.trust_digest import changed_files, config_digest, is_config_file

RECORDS = "trusted-folders.json"
HOOKS_FILE = Path(".agents") / "hooks.json"
MCP_FILE = ".mcp.json"
# .env values that change where the key goes, which key is used, or what may be written.
DOTENV_SENSITIVE = ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ALLOW_WRITE",
                    "MCP_CONFIG", "HOOKS", "AGENT_HOME", "WEBFETCH_ALLOW_PRIVATE")


def records_path(home: Path) -> Path:
    return home / RECORDS


def _load(home: Path) -> dict[str, Any]:
    try:
        data = json.loads(records_path(home).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    folders = data.get("folders") if isinstance(data, dict) else None
    return folders if isinstance(folders, dict) else {}


def _save(home: Path, folders: dict[str, Any]) -> None:
    ensure_private_dir(home)
    path = records_path(home)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"folders": folders}, fh, indent=2)
    os.replace(tmp, path)


def _key(folder: Path) -> str:
    return os.path.realpath(folder)


def _trusted_key(folders: dict[str, Any], folder: Path) -> str | None:
    path = Path(_key(folder))
    return next((str(p) for p in (path, *path.parents) if str(p) in folders), None)


def is_trusted(folder: Path, home: Path) -> bool:
    """True when the folder or one of its parents was trusted (by path; `config_changes` says whether the
    configuration is still what was trusted)."""
    return _trusted_key(_load(home), folder) is not None


def trust(folder: Path, home: Path) -> str:
    """Trust `folder` as it is now: its path, and the digest of the configuration a session there loads."""
    folders = _load(home)
    key = _key(folder)
    folders[key] = {"trusted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "config": {key: config_digest(Path(key))}}
    _save(home, folders)
    return key


def _recorded(entry: Any, cwd_key: str) -> dict[str, str] | None:
    config = entry.get("config") if isinstance(entry, dict) else None
    if not isinstance(config, dict):
        return None  # a record made before digests
    files = config.get(cwd_key)
    return {k: v for k, v in files.items() if isinstance(v, str)} if isinstance(files, dict) else {}


def config_changes(cwd: Path, home: Path) -> list[str] | None:
    """None when `cwd` is not trusted; else the configuration files (relative to `cwd`) added, changed or
    removed since the user trusted it. A session folder below the trusted one that was never seen has all
    its configuration to show. A record made before digests adopts the configuration as it is now."""
    folders = _load(home)
    root = _trusted_key(folders, cwd)
    if root is None:
        return None
    cwd_key, now = _key(cwd), config_digest(Path(_key(cwd)))
    recorded = _recorded(folders[root], cwd_key)
    if recorded is None:
        _set_digest(home, root, cwd_key, now)
        return []
    return changed_files(recorded, now)


def accept_config(cwd: Path, home: Path) -> None:
    """The user saw the changed configuration and trusts it: record it as it is now."""
    folders = _load(home)
    root = _trusted_key(folders, cwd)
    if root is not None:
        _set_digest(home, root, _key(cwd), config_digest(Path(_key(cwd))))


def _set_digest(home: Path, root: str, cwd_key: str, digest: dict[str, str]) -> None:
    folders = _load(home)
    entry = folders.get(root)
    if not isinstance(entry, dict):
        return
    config = entry.get("config")
    entry["config"] = {**(config if isinstance(config, dict) else {}), cwd_key: digest}
    _save(home, folders)


def refresh_file(path: Path, home: Path) -> None:
    """The agent itself wrote `path` (a rule the user granted): the digests that cover it follow."""
    folders = _load(home)
    real = _key(path)
    touched = False
    for entry in folders.values():
        config = entry.get("config") if isinstance(entry, dict) else None
        for cwd_key, files in (config or {}).items():
            rel = os.path.relpath(real, cwd_key)
            if isinstance(files, dict) and not rel.startswith("..") and is_config_file(rel):
                digest = config_digest(Path(cwd_key)).get(rel)
                if digest is None:
                    files.pop(rel, None)
                else:
                    files[rel] = digest
                touched = True
    if touched:
        _save(home, folders)


def changed_notice(cwd: Path, changed: list[str]) -> str:
    """The one line a one-shot run prints when the configuration changed since the folder was trusted."""
    shown = ", ".join(changed[:6]) + (f" and {len(changed) - 6} more" if len(changed) > 6 else "")
    return (f"configuration changed since this folder was trusted ({shown}): treated as untrusted. "
            f"Review it, then: agent trust {cwd}")


def revoke(folder: Path, home: Path) -> bool:
    folders = _load(home)
    removed = folders.pop(_key(folder), None) is not None
    if removed:
        _save(home, folders)
    return removed


def trusted_folders(home: Path) -> list[str]:
    return sorted(_load(home))


# -- what a folder asks for --------------------------------------------------------------------------


@dataclass
class FolderRequests:
    """What a folder's own files would make the agent do, for the question and the notice."""

    files: list[str] = field(default_factory=list)  # project configuration files present
    wants: list[str] = field(default_factory=list)  # one phrase each: "hooks (.agents/hooks.json)"

    @property
    def has_config(self) -> bool:
        return bool(self.files)


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def folder_requests(cwd: Path, ignored_settings: list[str]) -> FolderRequests:
    """The project's configuration files and what an untrusted folder does not get from them.

    `ignored_settings` is `MergedSettings.ignored` of an untrusted load (allow rules, modes, settings
    hooks, env, settings MCP servers); this adds `.agents/hooks.json`, `.mcp.json` and `.env`.
    """
    from services.settings_files import local_files, project_files

    out = FolderRequests()
    for p in [*project_files(cwd), *local_files(cwd), cwd / HOOKS_FILE, cwd / MCP_FILE, cwd / ".env"]:
        if p.is_file():
            out.files.append(str(p.relative_to(cwd)))
    out.wants.extend(ignored_settings)
    hooks = _json(cwd / HOOKS_FILE)
    if isinstance(hooks, dict) and hooks:
        out.wants.append(f"hooks ({HOOKS_FILE})")
    mcp = _json(cwd / MCP_FILE)
    if isinstance(mcp, dict) and isinstance(mcp.get("mcpServers"), dict) and mcp["mcpServers"]:
        out.wants.append(f"MCP servers {', '.join(sorted(mcp['mcpServers']))} ({MCP_FILE})")
    from services.config import read_dotenv

    env = read_dotenv(cwd)
    if env:
        sensitive = [k for k in env if k in DOTENV_SENSITIVE]
        out.wants.append(".env" + (f" ({', '.join(sensitive)})" if sensitive else ""))
    return out


def untrusted_notice(cwd: Path, wants: list[str]) -> str:
    """The one line an untrusted folder gets when it asked for something."""
    return (f"untrusted folder: ignored {'; '.join(wants)}. "
            f"Only its deny/ask rules apply. To trust it: agent trust {cwd}")
