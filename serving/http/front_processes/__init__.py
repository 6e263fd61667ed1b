"""Front processes (``http.front_workers``): N processes serve HTTP on the server's port and hand
their requests to the engine's process over a link, where every request meets one batcher per op.

* :mod:`.workers`: the engine side: starts, watches and drains the front processes;
* :mod:`.hub`: the engine side of the links: requests in, answers out;
* :mod:`.link`: the wire between them (framed pickles, many messages per frame);
* :mod:`.process`: one front process's main;
* :mod:`.remote_pipelines`: what the app in a front process reads of the engine's pipelines."""
