from serving.paddle_serving.channel import (
    ChannelData,
    ChannelDataErrcode,
    ChannelDataType,
    CustomExceptionCode,
    ProductErrCode,
)

__all__ = ["ChannelData", "ChannelDataErrcode", "ChannelDataType", "CustomExceptionCode", "ProductErrCode"]
