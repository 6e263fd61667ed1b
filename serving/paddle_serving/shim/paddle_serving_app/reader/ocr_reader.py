from serving.paddle_serving.reader import *  # noqa: F403 - the module path some examples import from
