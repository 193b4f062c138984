"""Sourced GPU, node and network data (TOML files; see docs/hardware.md)."""
