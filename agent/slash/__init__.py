"""Slash commands, shared by every front end."""
