"""Tiny helpers every room (cli, bench, powermon, fit) may import: atomic writes, UTC stamps, byte sizes, and the
one input boundary (TOML/JSON reading and pydantic validation with one-line errors). Imports none of the rooms."""
