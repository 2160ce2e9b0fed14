"""The file formats fit reads and writes: archline.results/1 rows and archline.costs/1 tables."""
