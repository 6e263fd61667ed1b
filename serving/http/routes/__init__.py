"""The app's route groups. Each module registers its routes on an :class:`~serving.http.app.HttpApp`
given a :class:`~serving.http.routes.context.RouteContext`, so it can be built
alone on a bare app (tests/integration/test_route_groups.py):

* :mod:`errors`: the JSON error answers every group's failures get (app-wide handlers);
* :mod:`prediction`: ``/<name>[/v<n>]/prediction`` (Paddle Serving) and ``/predict`` (native);
* :mod:`listing`: ``/pipelines`` and ``/<name>[/v<n>]/config``;
* :mod:`admin`: ``/admin/reload``;
* :mod:`health`: the liveness and readiness probes;
* :mod:`metrics`: ``/metrics``.

The page at ``/`` is ``serving.http.page``; who may call what, ``serving.http.access``.
"""
