"""Benchmark data: simulated families (``simulate.py``) and fetchers of public benchmarks (``fetch.py``).

A regular package, so that ``python -m datasets.fetch`` from the checkout finds this folder
even where another distribution named ``datasets`` is installed.
"""
