"""No secret in a Ray Serve config file: ``batchline ray build`` refuses configs that
hold a token.

The file embeds the configs and is read by more people than the token should be
(repositories, KubeRay specs, Ray's dashboard); replicas read tokens from the environment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from serving.config.documents import ConfigDocument
from serving.config.errors import SECRET_KEYS, ConfigError
from serving.service.auth import ADMIN_TOKEN_ENV, TOKEN_ENV

# each secret config key -> the environment variable a replica reads it from instead
ENV_OF_SECRET: Mapping[str, str] = {"auth_token": TOKEN_ENV, "admin_token": ADMIN_TOKEN_ENV}


def literal_secrets(documents: Sequence[ConfigDocument]) -> ConfigError | None:
    """One error naming every file and key that holds a token (never its value), or None."""
    errors = []
    for doc in documents:
        data = doc.data if isinstance(doc.data, Mapping) else {}
        for key in sorted(SECRET_KEYS):  # every key the config layer keeps out of messages
            env = ENV_OF_SECRET[key]
            if data.get(key):
                errors.append(
                    ConfigError(
                        doc.source,
                        key,
                        "a token would be written into the Ray Serve config (and shown by Ray's dashboard): "
                        f"remove it from the config and give the replicas {env} in their environment "
                        "(on Kubernetes from a Secret, as deploy/ray/rayservice.yaml does)",
                    )
                )
    return ConfigError.combine(errors) if errors else None
