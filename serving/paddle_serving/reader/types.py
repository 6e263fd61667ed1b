"""The array type the reader's transforms take and give (numpy, any dtype), named once for the hints."""

from typing import Any

import numpy.typing as npt

Array = npt.NDArray[Any]
"""An image, a map or a batch: the transforms keep Paddle Serving's dtypes, so no dtype is promised."""

ImInfo = dict[str, Any]
"""The ``im_info`` dict the Detection* transforms pass along (``im_shape``, ``scale_factor``)."""
