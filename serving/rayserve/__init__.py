"""The Ray Serve backend: the same config graph on a Ray cluster.

Each op runs as a Ray Serve deployment whose replicas run our own op stage
(:mod:`op_replica`: batcher, collate/uncollate, instances), so batching
behaves as in the single-process server, and calls from every ingress
replica batch together there. The ingress deployment (:mod:`ingress`) runs
the same HTTP app and pipelines as ``batchline serve``, with every op's
stage replaced by a proxy that calls the op's deployment through a
``DeploymentHandle`` (:mod:`remote_stage`). :mod:`app` turns configs into a
Ray Serve application and a Ray Serve config file.

Importing this package needs ``ray[serve]`` (the ``ray`` extra).
"""
