"""The front ends without a terminal: one-shot `-p` and the SDK's stream-json protocol."""
