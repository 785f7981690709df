"""Benchmarks of the BitGrid software model (not tests; run them as ``python -m bench.<name>``)."""
