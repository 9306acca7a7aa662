"""A server that explains itself on stderr and exits before answering initialize."""

import sys

sys.stderr.write("starting dies server\n")
sys.stderr.write("fatal: DATABASE_URL is not set\n")
sys.stderr.flush()
sys.exit(7)
