"""The one-node Slurm cluster (tests/support/slurm.py), started once per session for the lab tests that need it.

Without the packages or root the tests that need it are skipped with the reason; with ARCHLINE_REQUIRE_SLURM=1
(set by .ci/run, which installs them) a cluster that does not start is a failure, so CI cannot skip them."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from support import slurm


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[slurm.Cluster]:
    try:
        cluster = slurm.start(tmp_path_factory.mktemp("slurm"))
    except slurm.Unavailable as e:
        if os.environ.get("ARCHLINE_REQUIRE_SLURM") == "1":
            pytest.fail(f"the test Slurm cluster did not start: {e}")
        pytest.skip(f"no test Slurm cluster: {e}")
    old = {k: os.environ.get(k) for k in cluster.env}
    os.environ.update(cluster.env)
    try:
        yield cluster
    finally:
        cluster.stop()
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
