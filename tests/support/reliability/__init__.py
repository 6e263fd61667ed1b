"""Reliability drivers against a real ``batchline serve`` process (a fake-op
image config by default, or any image config); nothing here talks to anything
but 127.0.0.1.

* ``target``: the server a run drives (started here, or already running);
* ``rss_sampler``: RSS of a server's process tree, sampled over a run;
* ``known_good``: a valid request and the health check after a run;
* ``load``: capacity (closed loop), open-loop offered load, latency percentiles;
* ``overload``: offer ~3x capacity, check the server sheds load;
* ``soak``: steady load at ~70% of capacity, count errors, watch RSS;
* ``kills``: predictor processes SIGKILLed under load, what clients see.

Used by tests/e2e/test_reliability.py (short runs) and the CLIs
bench/overload.py, bench/soak.py (full runs); the fuzz is tests/support/fuzz.
"""
