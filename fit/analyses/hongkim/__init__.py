"""Hong & Kim (S3, ISCA 2010): the integrated power and performance (IPP) model."""
