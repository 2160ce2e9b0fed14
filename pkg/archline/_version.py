"""The one place the version is written (pyproject.toml reads it: ``[tool.scikit-build] metadata.version``)."""

__version__ = "0.2.0"
