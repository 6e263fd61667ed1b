"""Subcommands of ``batchline`` that choose between backends (the in-process server, Ray Serve)."""
