"""File formats: one owner per format, a reader and a writer on one type (docs/design.md)."""
