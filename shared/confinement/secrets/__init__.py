"""Secrets: patterns, known values, masking, and the protected files of the roots."""
