"""Subcommands of ``batchline`` that choose between backends (the in-process
server, Ray Serve); each module has ``add_arguments(parser)`` and ``main(args)``."""
