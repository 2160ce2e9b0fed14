"""The lab: the same locked, resumable sweeps across a lab's machines, on Slurm (a submitit job array) or on this
machine; their state; and one partitioned Parquet data set of every machine's rows.

``labfile`` (the lab file, read by its owner :mod:`archline.formats.lab_file`; its state files:
:mod:`archline.formats.lab_state`), ``task`` (what runs on a node), ``submit``,
``status``, ``collect``. docs/lab.md shows how to set it up on a cluster.
"""
