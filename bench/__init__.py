"""Benchmark scripts (``python bench/<name>.py``), their helpers (``bench.lib``)
and the helpers' tests (``bench/tests``). Not installed: the scripts put the
repo root on ``sys.path`` themselves.

bench may import ``tests.support``; tests never import bench.
"""
