"""Python client for quantd, the quantization service.

    from quantd_client import Client
    client = Client("localhost:50051")
    for event in client.quantize(onnx_model=open("m.onnx", "rb").read(),
                                 tpc="imx500@4.0", samples=[{"x": array}]):
        print(event)

The generated stubs (quantd.v1.*_pb2) must be importable: they are built
into <build>/python by CMake (target quantd_python_stubs).
"""

from quantd_client.client import (  # noqa: F401
    Client,
    QuantdError,
    sample_from_arrays,
    tensor_from_array,
)
