"""MCP client: config loading, server connections, names, content, prompts and @mentions."""

from services.mcp.config import ServerConfig, load_config
from services.mcp.manager import McpError, McpManager, PromptInfo
from services.mcp.names import public_tool_name

__all__ = ["McpError", "McpManager", "PromptInfo", "ServerConfig", "load_config", "public_tool_name"]
