"""What Paddle Serving's ops hand each other and a ``ResponseOp`` packs: :class:`ChannelData`,
with its error codes and data types as Paddle Serving 0.9 numbers them (users compare them)."""

from __future__ import annotations

import enum
from typing import Any

import numpy as np


class ChannelDataErrcode(enum.Enum):
    """Paddle Serving's ``CustomExceptionCode``: 50 product errors, 3000s service, 4000s config,
    5000s input, 6000s timeouts, 7000s types, 8000s communication, 9000s inference."""

    OK = 0
    PRODUCT_ERROR = 50
    NOT_IMPLEMENTED = 3000
    CLOSED_ERROR = 3001
    NO_SERVICE = 3002
    INIT_ERROR = 3003
    CONF_ERROR = 4000
    INPUT_PARAMS_ERROR = 5000
    TIMEOUT = 6000
    TYPE_ERROR = 7000
    RPC_PACKAGE_ERROR = 8000
    CLIENT_ERROR = 9000
    UNKNOW = 10000


CustomExceptionCode = ChannelDataErrcode


class ProductErrCode(enum.Enum):
    """Business error codes (51..99) a product adds by subclassing, as in Paddle Serving."""


class ChannelDataType(enum.Enum):
    DICT = 0
    CHANNEL_NPDATA = 1
    ERROR = 2


def check_npdata(npdata: Any) -> tuple[int, str | None]:
    """(OK, None) when ``npdata`` is a dict of arrays (or of lists of strings), or a list of such dicts."""
    ok = ChannelDataErrcode.OK.value, None
    wrong = ChannelDataErrcode.TYPE_ERROR.value
    if isinstance(npdata, list):
        for sample in npdata:
            if not isinstance(sample, dict):
                return wrong, f"Failed to check data: the value of data must be dict, but get {type(sample)}."
            for value in sample.values():
                if not isinstance(value, np.ndarray):
                    return wrong, f"Failed to check data: the value of data must be np.ndarray, but get {type(value)}."
        return ok
    if isinstance(npdata, dict):
        for value in npdata.values():
            strings = isinstance(value, list) and bool(value) and isinstance(value[0], str)
            if not isinstance(value, np.ndarray) and not strings:
                return wrong, f"Failed to check data: the value of data must be np.ndarray, but get {type(value)}."
        return ok
    return wrong, f"Failed to check data: the value of data must be dict, but get {type(npdata)}."


def check_dictdata(dictdata: Any) -> tuple[int, str | None]:
    """(OK, None) when ``dictdata`` is a dict, or a list of dicts."""
    samples = dictdata if isinstance(dictdata, list) else [dictdata]
    for sample in samples:
        if not isinstance(sample, dict):
            return (
                ChannelDataErrcode.TYPE_ERROR.value,
                f"Failed to check data: the type of data must be dict, but get {type(sample)}.",
            )
    return ChannelDataErrcode.OK.value, None


class ChannelData:
    """One request's data between two ops: a dict of arrays (``CHANNEL_NPDATA``), any dict
    (``DICT``), or an error (``error_code``/``error_info``, a product's ``prod_error_code``)."""

    check_npdata = staticmethod(check_npdata)
    check_dictdata = staticmethod(check_dictdata)

    def __init__(
        self,
        datatype: int | None = None,
        npdata: Any = None,
        dictdata: Any = None,
        data_id: int | None = None,
        log_id: Any = None,
        error_code: int | None = None,
        error_info: str | None = None,
        prod_error_code: int | None = None,
        prod_error_info: str | None = None,
        client_need_profile: bool = False,
    ):
        if error_code is not None or prod_error_code is not None:
            datatype = ChannelDataType.ERROR.value
        elif datatype == ChannelDataType.CHANNEL_NPDATA.value:
            error_code, error_info = check_npdata(npdata)
        elif datatype == ChannelDataType.DICT.value:
            error_code, error_info = check_dictdata(dictdata)
        else:
            raise ValueError(f"ChannelData: datatype {datatype!r} is none of ChannelDataType's")
        if error_code not in (None, ChannelDataErrcode.OK.value):
            datatype = ChannelDataType.ERROR.value
        self.datatype = datatype
        self.npdata = npdata
        self.dictdata = dictdata
        self.id = data_id
        self.log_id = log_id
        self.error_code = error_code
        self.error_info = error_info
        self.prod_error_code = prod_error_code
        self.prod_error_info = prod_error_info
        self.client_need_profile = client_need_profile
        self.profile_data_set: set = set()

    def parse(self) -> Any:
        """The data: the arrays, or the dict."""
        if self.datatype == ChannelDataType.CHANNEL_NPDATA.value:
            return self.npdata
        if self.datatype == ChannelDataType.DICT.value:
            return self.dictdata
        raise ValueError(f"ChannelData of type {self.datatype} holds no data (error {self.error_code})")


def output_channel_data(out: dict, data_id: int, log_id: Any) -> ChannelData:
    """What Paddle Serving makes of a postprocess's dict: arrays when they all are, else a dict."""
    if check_npdata(out)[0] == ChannelDataErrcode.OK.value:
        return ChannelData(ChannelDataType.CHANNEL_NPDATA.value, npdata=out, data_id=data_id, log_id=log_id)
    return ChannelData(ChannelDataType.DICT.value, dictdata=out, data_id=data_id, log_id=log_id)
