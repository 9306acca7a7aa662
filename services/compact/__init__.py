"""The outbound pipeline: stage 0 autocompact, then budget, micro, retain."""
