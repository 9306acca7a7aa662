"""The loop, the engine and the one factory that builds it."""
