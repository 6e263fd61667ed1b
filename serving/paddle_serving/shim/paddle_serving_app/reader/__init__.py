from serving.paddle_serving.reader import *  # noqa: F403 - the readers Paddle Serving's examples import
