"""MCP client: config loading, server connections, tools, resources, prompts and @mentions."""

from services.mcp.config import ServerConfig, load_config
from services.mcp.manager import McpError, McpManager, PromptInfo, extract_mentions, public_tool_name

__all__ = ["McpError", "McpManager", "PromptInfo", "ServerConfig", "extract_mentions", "load_config", "public_tool_name"]
