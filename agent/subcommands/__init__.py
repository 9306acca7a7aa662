"""`agent doctor`, `agent config`, `agent mcp`, `agent trust`."""
