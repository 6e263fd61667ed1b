"""The Ray Serve backend: the same config graph on a Ray cluster (docs/DESIGN_NOTES.md,
"Ray Serve backend").

Each op is a deployment whose replicas run our own op stage; the ingress runs the
same HTTP app as ``batchline serve`` with remote stages. Needs ``ray[serve]``.
"""
