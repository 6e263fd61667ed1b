"""``batchline serve web_service.py``: a Paddle Serving script read into batchline's config
(the same loader, the same checks), and read again on reload."""

from __future__ import annotations

from collections.abc import Sequence

from serving.config.errors import FILE_KEY, ConfigError
from serving.config.file_set import RepositoryConfig, repository_from
from serving.config.load import parse_config
from serving.paddle_serving.config_bridge import service_document
from serving.paddle_serving.service_file import ServiceFileError, read_service


def is_service_script(sources: Sequence[str]) -> bool:
    """Whether ``sources`` name a Paddle Serving script (one ``.py`` file) rather than configs."""
    return len(sources) == 1 and str(sources[0]).endswith(".py")


def load_service_repository(sources: Sequence[str], script_args: Sequence[str] = ()) -> RepositoryConfig:
    """The repository of the one script in ``sources`` (run with ``script_args`` as its command line);
    a ConfigError naming what is wrong."""
    (script,) = sources
    try:
        service = read_service(script, script_args)
        document = service_document(service, service.config_file)
    except ServiceFileError as exc:
        raise ConfigError(script, FILE_KEY, str(exc)) from None
    config = parse_config(document.data, document.source, document.path)
    return repository_from([script], [(document.source, config)])  # a reload reads the script again
