"""``batchline tune``: measure each op's cost curve on this machine with the
user's inputs, predict p99 with a simulation of the real batcher, recommend
batching settings and an instance layout, write a tuned config and verify it
against the original with the bundled bench. It sits above both the server
(whose engine it measures and simulates) and the client (whose bench verifies);
neither imports it."""
