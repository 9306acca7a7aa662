"""Services: the compact pipeline, tool-result storage, tokens, hooks, MCP, skills, memory, web."""
