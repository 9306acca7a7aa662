"""/rewind (and Esc Esc at the prompt): pick an earlier prompt, restore the conversation to just before
it, the files the later turns changed, or both."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from agent.repl.parts import ReplParts
from agent.repl.permission_menu import visible


class RewindPart(ReplParts):
    async def cmd_rewind(self, ctx: Any, args: str) -> None:
        """Pick an earlier prompt; restore the conversation to just before it, the code, or both."""
        prompts = [(i, m) for i, m in enumerate(self.engine.messages)
                   if m.get("role") == "user" and not m.get("meta") and prompt_text(m)]
        if not prompts:
            self.say("Nothing to rewind to yet.", "dim")
            return
        shown = prompts[-20:]
        options = [(str(n), prompt_text(m).splitlines()[0][:100]) for n, (_, m) in enumerate(shown, 1)]
        picked = await self.pick("Rewind to just before which prompt?", options)
        if picked is None:
            return
        index = shown[int(picked) - 1][0]
        from agent.slash.rewind import report_hand_edits

        keep = await asyncio.to_thread(self.checkpoints.changed_by_others, index)
        report_hand_edits(self.say, keep)
        # Bash snapshots are compared with the tree through git: off the event loop, the prompt stays live.
        changed = await asyncio.to_thread(self.checkpoints.files_since, index)
        for cp in changed[:10]:
            self.say(f"  {visible(cp.path)}", "dim")
        if len(changed) > 10:
            self.say(f"  … {len(changed) - 10} more", "dim")
        if changed:
            self.say("Restoring code also undoes later changes you made to these files by hand.", "dim")
        how = await self.pick("Restore:", [("both", f"conversation and code ({len(changed)} files)"),
                                           ("conversation", "conversation only"),
                                           ("code", f"code only ({len(changed)} files)")])
        if how is None:
            return
        if how in ("both", "code"):
            restored, problems = await asyncio.to_thread(self.checkpoints.restore, index, frozenset(keep))
            self.say(f"Restored {len(restored)} file(s).", "dim")
            for p in problems:
                self.say(f"not restored: {visible(p)}", "yellow")
        if how in ("both", "conversation"):
            text = prompt_text(self.engine.messages[index])
            self.engine.replace_history(self.engine.messages[:index])
            if how == "conversation":
                self.checkpoints.forget(index)  # later turns reuse these numbers (restore forgets them itself)
            self.next_default = text  # the prompt comes back in the input box, to edit and send again
            self.say(f"Conversation rewound to before: {visible(text.splitlines()[0][:100])}", "dim")


def prompt_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if b.get("type") == "text").strip()


def last_prompt_index(messages: Sequence[Mapping[str, Any]]) -> int:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user" and not messages[i].get("meta") and prompt_text(messages[i]):
            return i
    return len(messages)
