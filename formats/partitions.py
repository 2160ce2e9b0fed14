"""Hive partition values from a path (``DATASET/platform=gtx580/host=n1/run_id=r/part-0.parquet``): the
``key=value`` directories above a file, percent-decoded as hive writes them, from the data set's own root even
when the path given is a partition directory or one part file (:mod:`archline.formats.dataset` owns the format)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

from archline.common.outputs import note_input

__all__ = ["dataset_listing", "dataset_root", "file_partition", "note_dataset_input", "partition_values"]


def _partition_part(name: str) -> tuple[str, str] | None:
    """(key, value) of a hive directory name ``key=value`` (percent-decoded), or None."""
    if "=" not in name:
        return None
    k, v = name.split("=", 1)
    return (unquote(k), unquote(v)) if k else None


def dataset_root(path: Path) -> Path:
    """The data set directory that ``path`` (a directory, or a file) lies in: the first directory above the run of
    ``key=value`` directories that ends at ``path`` (a file: at its parent). The writer leaves no marker file, and
    a data set's root is never itself a partition, so ``DATASET/platform=gtx580/host=n1`` and its part files lie
    in ``DATASET``; a path with no ``key=value`` directory above it is its own root (a directory) or in its
    parent (a file)."""
    d = path if path.is_dir() else path.parent
    while _partition_part(d.name) is not None and d.parent != d:
        d = d.parent
    return d


def dataset_listing(root: Path, suffixes: tuple[str, ...]) -> tuple[list[Path], list[Path]]:
    """(the data files a reader reads in the data set directory ``root``: those ending in ``suffixes``, sorted; the
    other files it skips). Entries whose path below ``root`` has a hidden or ``_``-prefixed component (``.tmp``,
    ``_SUCCESS``, ``_metadata``, ``_common_metadata``, Spark's ``_temporary/``) are neither, as pyarrow's and
    Spark's hive readers skip them."""
    files: list[Path] = []
    other: list[Path] = []
    for p in sorted(root.rglob("*")):
        if any(x.startswith((".", "_")) for x in p.relative_to(root).parts) or not p.is_file():
            continue
        (files if p.suffix in suffixes else other).append(p)
    return files, other


def note_dataset_input(path: Path) -> None:
    """Note ``path`` (a data set directory, a partition directory or a part file) as an input of the command, and
    with a partition directory or part file the data set's root too: an output written anywhere in the data set
    (``fit ds/platform=gtx580/host=n1 --out ds/x.json``) would be read back as data by the next reader of
    ``ds``, so :mod:`archline.common.outputs` refuses it."""
    note_input(path)
    here = path.absolute()
    root = dataset_root(here)
    if root != (here if here.is_dir() else here.parent):
        given = dataset_root(path)          # as the user named it (``ds``), unless the walk left what was given
        note_input(given if given.absolute() == root else root)


def partition_values(path: Path, root: Path) -> dict[str, str]:
    """The ``key=value`` directory components above the file ``path``, decoded: those between ``root`` and the
    file, and, when ``root`` is itself inside a data set (a partition directory given to the fit), those between
    the data set's own root (:func:`dataset_root`) and ``root``, so that a partition directory or one part file
    read alone keeps its partition columns. A nearer component wins over one further up with the same key."""
    out: dict[str, str] = {}
    path, root = path.absolute(), root.absolute()      # the current directory may itself be a partition
    top = dataset_root(root) if root.is_dir() else root
    for part in path.relative_to(top).parts[:-1]:
        kv = _partition_part(part)
        if kv is not None:
            out[kv[0]] = kv[1]
    return out


def file_partition(path: Path) -> dict[str, str]:
    """:func:`partition_values` of one Parquet file given on its own (its ``key=value`` parent directories)."""
    return partition_values(path, path.parent)
