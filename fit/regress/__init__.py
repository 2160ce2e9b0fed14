"""The regressions that turn result rows into cost tables, their result type and validation."""
