"""Malformed-request fuzz of a running ``batchline serve`` (image pipelines).

* ``malformed``: image bytes that lie (headers of huge images, decompression bombs);
* ``case``: :class:`Limits` the cases probe, the :class:`Request` a case builds,
  the :class:`Case` sent (request + category + allowed statuses);
* ``draw``: :class:`Draw`, seeded random request material the case builders share;
* ``image_cases``, ``body_cases``, ``http_cases``: the case builders;
* ``cases``: the case table (name, builder, weight, allowed statuses) and
  :func:`~tests.support.fuzz.cases.generate`;
* ``checks``: whether an answer is acceptable;
* ``report``: what a run found; ``runner``: :func:`~tests.support.fuzz.runner.run_fuzz`.

Used by tests/e2e/test_reliability.py, tests/integration/test_fuzz_http.py and
the CLI bench/fuzz.py.
"""
