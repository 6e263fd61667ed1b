"""What the benchmark scripts share, one concern a module:

* ``paths``: repo root, results and cache directories;
* ``engines``: the thread budget and CPU engine every bench op runs on;
* ``script``: :class:`~bench.lib.script.BenchError` and how a script exits;
* ``configs``: temp configs derived from a repo config with overrides;
* ``server``: ``batchline serve`` on a config or repository directory, in a subprocess (optionally confined to CPUs);
* ``inprocess``: an op and its predictor runners built as the server builds them;
* ``inputs``: rendered pages and text-line crops (cached on disk);
* ``measure``: closed loops against a server and its /metrics, in-process timing loops, RSS (of a process tree too);
* ``multi``: several pipelines in one server: repository directories, concurrent loads, pooled rounds,
  shared-op and shadow metrics;
* ``results``: bench/results/*.json with machine info, verdicts;
* ``lone_requests``: lone requests to several targets in a fresh random order, median each;
* ``paddleocr_engines``: PaddleOCR predictors on another engine or precision;
* ``gpu/``: ``bench.gpu_check``'s steps (the GPU check, its ``--prepare`` for a GPU host).
"""
