"""How the shipped demo models are made: data generators, training and export.

Not installed: the wheel carries only each model and its card (``pipelines/*/model``,
``pipelines/*/README.md``); nothing the server or the ops import lives here
(setup.cfg, ``[importlinter]``). Not named ``tools``: PaddleOCR puts its own ``tools``
package on ``sys.path`` (the tests import ``tools.infer`` as the reference for ``ops/ppocr``), and the two
would shadow each other.
"""
