"""How the shipped demo models are made: data generators, training and export.

Not installed: the wheel carries only each model and its card (``pipelines/*/model``,
``pipelines/*/README.md``); nothing the server or the ops import lives here
(setup.cfg, ``[importlinter]``). Not named ``tools``: PaddleOCR puts its own ``tools``
package on ``sys.path`` (``ops/image.py`` imports ``tools.infer``), and the two would shadow each other.
"""
