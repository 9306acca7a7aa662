"""Exit codes of every front end, Claude Code's: 0 success, 1 any error (the turn limit and the budget
included: the json result's `subtype` says which), 2 usage error, 130 interrupted. Ours on top:
74 the machine refused (an OSError at an entry point: disk full, permission denied, read-only file system;
one line names the path and what was kept), 141 stdout was closed (128 + SIGPIPE, quietly)."""

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_OS_ERROR = 74  # sysexits EX_IOERR
EXIT_BROKEN_PIPE = 141
