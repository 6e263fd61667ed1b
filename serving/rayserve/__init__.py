"""The Ray Serve backend: the same config graph on a Ray cluster, each op a deployment running
our own op stage (docs/DESIGN_NOTES.md, "Ray Serve backend"). Needs ``ray[serve]``.
"""
