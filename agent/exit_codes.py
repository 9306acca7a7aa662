"""Exit codes of every front end, Claude Code's: 0 success, 1 any error (the turn limit and the budget
included: the json result's `subtype` says which), 2 usage error, 130 interrupted."""

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
