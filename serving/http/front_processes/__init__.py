"""Front processes (``http.front_workers``): N processes serve HTTP on the server's port
and hand their requests over a link (:mod:`.link`) to the engine's process (:mod:`.hub`),
where every request meets one batcher per op."""
