"""Benchmark scripts and reliability drivers, each run from the repo root as
``python -m bench.<name>``; their helpers (``bench.lib``) and the helpers'
tests (``bench/tests``). Not installed: ``-m`` puts the repo root on the path.

bench may import ``tests.support``; tests never import bench.
"""
