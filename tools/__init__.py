"""Tools the model can call: the Tool interface, orchestration, the permission gate, one module per tool."""
