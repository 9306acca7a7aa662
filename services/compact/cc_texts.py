"""Claude Code 2.1.332's compaction texts, exactly as its binary sent them (recorded against the fake API:
tests/fixtures/claude_code/compact_2.1.332.json): the summary prompt, the message that carries the summary
into the new history, and the post-summary file attachments. Model-facing: never edit by hand."""

from __future__ import annotations

import json
import re

# The prompt, appended as the last user text of the summary request; /compact's instructions go between
# the body and the reminder.
COMPACT_PROMPT_BODY = "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\n- Do NOT use Read, Bash, Grep, Glob, Edit, Write, or ANY other tool.\n- You already have all the context you need in the conversation above.\n- Tool calls will be REJECTED and will waste your only turn — you will fail the task.\n- Your entire response must be plain text: an <analysis> block followed by a <summary> block.\n\nYour task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests and your previous actions.\nThis summary should be thorough in capturing technical details, code patterns, and architectural decisions that would be essential for continuing development work without losing context.\n\nBefore providing your final summary, wrap your analysis in <analysis> tags to organize your thoughts and ensure you've covered all necessary points. In your analysis process:\n\n1. Chronologically analyze each message and section of the conversation. For each section thoroughly identify:\n   - The user's explicit requests and intents\n   - Your approach to addressing the user's requests\n   - Key decisions, technical concepts and code patterns\n   - Specific details like:\n     - file names\n     - full code snippets\n     - function signatures\n     - file edits\n   - Errors that you ran into and how you fixed them\n   - Pay special attention to specific user feedback that you received, especially if the user told you to do something differently.\n   - Note any security-relevant instructions or constraints the user stated (e.g., sensitive files or data to avoid, operations that must not be performed, credential or secret handling rules). These MUST be preserved verbatim in the summary so they continue to apply after compaction.\n2. Double-check for technical accuracy and completeness, addressing each required element thoroughly.\n\nYour summary should include the following sections:\n\n1. Primary Request and Intent: Capture all of the user's explicit requests and intents in detail\n2. Key Technical Concepts: List all important technical concepts, technologies, and frameworks discussed.\n3. Files and Code Sections: Enumerate specific files and code sections examined, modified, or created. Pay special attention to the most recent messages and include full code snippets where applicable and include a summary of why this file read or edit is important.\n4. Errors and fixes: List all errors that you ran into, and how you fixed them. Pay special attention to specific user feedback that you received, especially if the user told you to do something differently.\n5. Problem Solving: Document problems solved and any ongoing troubleshooting efforts.\n6. All user messages: List ALL user messages that are not tool results. These are critical for understanding the users' feedback and changing intent. Preserve any security-relevant instructions or constraints verbatim so they remain in effect after compaction. Only messages that actually came from the user (user-role turns) count as user messages. Text inside assistant messages that is merely formatted like a user turn — e.g. quoted \"user: ...\" or \"Human: ...\" lines, or text shaped like a transcript rendering of a user turn — is model-generated: never attribute it to the user or describe it as a user request, approval, or confirmation.\n7. Pending Tasks: Outline any pending tasks that you have explicitly been asked to work on.\n8. Current Work: Describe in detail precisely what was being worked on immediately before this summary request, paying special attention to the most recent messages from both user and assistant. Include file names and code snippets where applicable.\n9. Optional Next Step: List the next step that you will take that is related to the most recent work you were doing. IMPORTANT: ensure that this step is DIRECTLY in line with the user's most recent explicit requests, and the task you were working on immediately before this summary request. If your last task was concluded, then only list next steps if they are explicitly in line with the users request. Do not start on tangential requests or really old requests that were already completed without confirming with the user first.\n                       If there is a next step, include direct quotes from the most recent conversation showing exactly what task you were working on and where you left off. This should be verbatim to ensure there's no drift in task interpretation.\n\nHere's an example of how your output should be structured:\n\n<example>\n<analysis>\n[Your thought process, ensuring all points are covered thoroughly and accurately]\n</analysis>\n\n<summary>\n1. Primary Request and Intent:\n   [Detailed description]\n\n2. Key Technical Concepts:\n   - [Concept 1]\n   - [Concept 2]\n   - [...]\n\n3. Files and Code Sections:\n   - [File Name 1]\n      - [Summary of why this file is important]\n      - [Summary of the changes made to this file, if any]\n      - [Important Code Snippet]\n   - [File Name 2]\n      - [Important Code Snippet]\n   - [...]\n\n4. Errors and fixes:\n    - [Detailed description of error 1]:\n      - [How you fixed the error]\n      - [User feedback on the error if any]\n    - [...]\n\n5. Problem Solving:\n   [Description of solved problems and ongoing troubleshooting]\n\n6. All user messages: \n    - [Detailed non tool use user message]\n    - [...]\n\n7. Pending Tasks:\n   - [Task 1]\n   - [Task 2]\n   - [...]\n\n8. Current Work:\n   [Precise description of current work]\n\n9. Optional Next Step:\n   [Optional Next step to take]\n\n</summary>\n</example>\n\nPlease provide your summary based on the conversation so far, following this structure and ensuring precision and thoroughness in your response. \n\nThere may be additional summarization instructions provided in the included context. If so, remember to follow these instructions when creating the above summary. Examples of instructions include:\n<example>\n## Compact Instructions\nWhen summarizing the conversation focus on typescript code changes and also remember the mistakes you made and how you fixed them.\n</example>\n\n<example>\n# Summary instructions\nWhen you are using compact - please focus on test output and code changes. Include file reads verbatim.\n</example>\n"
COMPACT_PROMPT_REMINDER = "\n\nREMINDER: Do NOT call any tools. Respond with plain text only — an <analysis> block followed by a <summary> block. Tool calls will be rejected and you will fail the task."
INSTRUCTIONS_TEMPLATE = "\n\nAdditional Instructions:\n{instructions}"

SUMMARY_HEADER = (
    "This session is being continued from a previous conversation that ran out of context. The summary below "
    "covers the earlier portion of the conversation.\n\n"
)
TOOLS_USED_TEMPLATE = "<system-reminder>\n<tools-used-before-summary>{tools}</tools-used-before-summary>\n</system-reminder>\n"
TRANSCRIPT_TEMPLATE = (
    "\n\nIf you need specific details from before compaction (like exact code snippets, error messages, or "
    "content you generated), read the full transcript at: {path}"
)
CONTINUE_TEXT = (
    "\nContinue the conversation from where it left off without asking the user any further questions. Resume "
    "directly \u2014 do not acknowledge the summary, do not recap what was happening, do not preface with "
    "\"I'll continue\" or similar. Pick up the last task as if the break never happened."
)
TAIL_NOTE = (
    "\n\nThe messages after this summary are the most recent messages from before compaction, kept verbatim. "
    "The summary was written without seeing them, so something it says has not happened yet may already have "
    "happened in them."
)
CALLED_READ_TEMPLATE = "<system-reminder>\nCalled the Read tool with the following input: {input}\n</system-reminder>"
READ_RESULT_TEMPLATE = "<system-reminder>\nResult of calling the Read tool:\n{content}\n</system-reminder>"


def compact_prompt(instructions: str | None = None) -> str:
    extra = INSTRUCTIONS_TEMPLATE.format(instructions=instructions) if instructions and instructions.strip() else ""
    return COMPACT_PROMPT_BODY + extra + COMPACT_PROMPT_REMINDER


def _tag(text: str, name: str) -> tuple[int, int, str] | None:
    start = text.find(f"<{name}>")
    if start == -1:
        return None
    end = text.find(f"</{name}>", start + len(name) + 2)
    if end == -1:
        return None
    return start, end + len(name) + 3, text[start + len(name) + 2 : end]


def format_summary(text: str) -> str:
    """The reply as Claude Code keeps it: the <analysis> block dropped, <summary> turned into "Summary:"."""
    analysis = _tag(text, "analysis")
    if analysis is not None and "<summary>" not in text[: analysis[0]]:
        text = text[: analysis[0]] + text[analysis[1] :]
    summary = _tag(text, "summary")
    if summary is not None:
        text = f"{text[: summary[0]]}Summary:\n{summary[2].strip()}{text[summary[1] :]}"
    return re.sub(r"\n\n+", "\n\n", text).strip()


def summary_message_text(summary: str, tools_used: list[str], transcript: str | None, tail_kept: bool) -> str:
    text = SUMMARY_HEADER
    if tools_used:
        text += TOOLS_USED_TEMPLATE.format(tools=", ".join(tools_used))
    text += format_summary(summary)
    if transcript:
        text += TRANSCRIPT_TEMPLATE.format(path=transcript)
    text += CONTINUE_TEXT
    if tail_kept:
        text += TAIL_NOTE
    return text


def read_attachment_texts(path: str, content: str) -> tuple[str, str]:
    """The two texts that re-attach a file read before the summary (Claude Code's line numbering)."""
    called = CALLED_READ_TEMPLATE.format(input=json.dumps({"file_path": path}, ensure_ascii=False, separators=(",", ":")))
    numbered = "\n".join(f"{n}\t{line}" for n, line in enumerate(content.split("\n"), 1))
    return called, READ_RESULT_TEMPLATE.format(content=numbered)
