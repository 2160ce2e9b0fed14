"""formats/results_read.ahead: the results reader's read-ahead thread gives every item in order, raises the producer's
error where its item would have come, and closes the producer (its open files) when the consumer stops early."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from archline.formats.results_read import ahead


def test_items_in_order_and_the_thread_ends() -> None:
    before = threading.active_count()
    assert list(ahead(iter(range(50)))) == list(range(50))
    assert threading.active_count() == before


def test_the_producers_error_is_raised_after_its_good_items() -> None:
    def items() -> Iterator[int]:
        yield 1
        yield 2
        raise ValueError("bad row 3")

    got: list[int] = []
    with pytest.raises(ValueError, match="bad row 3"):
        for x in ahead(items()):
            got.append(x)
    assert got == [1, 2]


def test_stopping_early_closes_the_producer_in_its_thread() -> None:
    closed: list[bool] = []
    produced: list[int] = []

    def items() -> Iterator[int]:
        try:
            for i in range(1000):
                produced.append(i)
                yield i
        finally:
            closed.append(True)

    before = threading.active_count()
    with pytest.raises(RuntimeError):
        for x in ahead(items()):
            if x == 3:
                raise RuntimeError("consumer fails")
    assert closed == [True] and len(produced) <= 5      # at most one item beyond the one being consumed
    assert threading.active_count() == before
