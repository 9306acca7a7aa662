"""The interactive front end, split by concern: session, input, keys, rendering, menus."""
