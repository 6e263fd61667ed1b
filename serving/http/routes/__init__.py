"""The app's route groups: each module's ``register(app, ctx)`` adds its routes to an
:class:`~serving.http.app.HttpApp` from a :class:`~serving.http.app.RouteContext`, so a group
can be built alone on a bare app (tests/integration/test_route_groups.py)."""
