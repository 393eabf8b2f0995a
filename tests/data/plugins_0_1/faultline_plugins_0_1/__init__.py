"""Plugins written as faultline-eval 0.1 documented them (see ../README.md)."""
