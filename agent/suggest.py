"""Claude Code's "did you mean" for a mistyped option (its CLI library, commander, as 2.1.332 runs it;
recorded in tests/fixtures/claude_code/cli_usage.json): the visible long options within an edit distance of
3 (optimal string alignment: a swap of two neighbours counts 1) and more than 40% alike, the closest kept,
ties sorted."""

from __future__ import annotations

MAX_DISTANCE = 3
MIN_SIMILARITY = 0.4


def edit_distance(a: str, b: str) -> int:
    d = [[i + j if i == 0 or j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def similar(word: str, candidates: list[str]) -> list[str]:
    """The candidates closest to `word` (both `--flag`s), or none close enough."""
    word = word.removeprefix("--")
    best, found = MAX_DISTANCE, []
    for candidate in dict.fromkeys(c.removeprefix("--") for c in candidates):
        if len(candidate) <= 1:
            continue
        distance = edit_distance(word, candidate)
        length = max(len(word), len(candidate))
        if (length - distance) / length <= MIN_SIMILARITY:
            continue
        if distance < best:
            best, found = distance, [candidate]
        elif distance == best:
            found.append(candidate)
    return [f"--{c}" for c in sorted(found, key=lambda c: (c.lower(), c))]  # localeCompare-like


def unknown_option_message(flag: str, candidates: list[str]) -> str:
    """Claude Code's two lines (without the final newline): the unknown option, then the suggestion."""
    found = similar(flag, candidates) if flag.startswith("--") else []
    message = f"error: unknown option '{flag}'"
    if len(found) > 1:
        return f"{message}\n(Did you mean one of {', '.join(found)}?)"
    if found:
        return f"{message}\n(Did you mean {found[0]}?)"
    return message
