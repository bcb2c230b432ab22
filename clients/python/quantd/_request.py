"""QuantizeRequest from Python values: a model, samples as numpy arrays and
the job options in the text forms `quantctl quantize` takes (turned into
request fields by the engine's own parsers, quantd._quantd)."""

import os

from quantd.v1 import job_pb2, tensor_pb2

# numpy dtype name -> quantd.v1.DataType
_DTYPES = {
    "float32": tensor_pb2.DATA_TYPE_FLOAT,
    "uint8": tensor_pb2.DATA_TYPE_UINT8,
    "int8": tensor_pb2.DATA_TYPE_INT8,
    "uint16": tensor_pb2.DATA_TYPE_UINT16,
    "int16": tensor_pb2.DATA_TYPE_INT16,
    "int32": tensor_pb2.DATA_TYPE_INT32,
    "int64": tensor_pb2.DATA_TYPE_INT64,
    "bool": tensor_pb2.DATA_TYPE_BOOL,
    "float16": tensor_pb2.DATA_TYPE_FLOAT16,
    "float64": tensor_pb2.DATA_TYPE_DOUBLE,
}


def tensor_from_array(name, array):
    """quantd.v1.Tensor (raw little-endian bytes) from a numpy array."""
    import numpy as np

    array = np.asarray(array)
    dtype = _DTYPES.get(array.dtype.name)
    if dtype is None:
        raise ValueError(f"input {name!r}: unsupported dtype {array.dtype}")
    little = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    return tensor_pb2.Tensor(name=name, data_type=dtype,
                             dims=list(array.shape), raw_data=little.tobytes())


def sample_from_arrays(inputs):
    """quantd.v1.Sample from {input name: numpy array}."""
    if isinstance(inputs, tensor_pb2.Sample):
        return inputs
    if not hasattr(inputs, "items"):
        raise TypeError("a calibration sample is a dict {input name: array}, "
                        f"not {type(inputs).__name__}")
    return tensor_pb2.Sample(
        inputs=[tensor_from_array(n, a) for n, a in inputs.items()])


def model_bytes(model):
    """The ONNX bytes of a path, bytes or an onnx.ModelProto."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model)
    if hasattr(model, "SerializeToString"):
        return model.SerializeToString()
    with open(os.fspath(model), "rb") as f:
        return f.read()


def _targets(mp):
    """mp as a dict {"weights": 0.75, ...} or the --mp text."""
    if mp is None:
        return ""
    if isinstance(mp, str):
        return mp
    return ",".join(f"{k}={v}" for k, v in mp.items())


def _overrides(bits):
    """bits_override as a dict {"type:Conv": 4, ...} or the text form."""
    if bits is None:
        return ""
    if isinstance(bits, str):
        return bits
    return ",".join(f"{k}={int(v)}" for k, v in bits.items())


def _formats(export):
    if export is None:
        return ""
    if isinstance(export, str):
        return export
    return ",".join(export)


def build_request(model, calibration, *, tpc, evaluation=None, mp=None,
                  bits_override=None, weights_bits=0,
                  activation_storage="", export=None, gptq=False, threads=0,
                  report_samples=0, config="", request_id=""):
    """The QuantizeRequest for quantd.quantize and quantd.Client.quantize.

    calibration and evaluation: iterables (lists, generators) of
    {input name: numpy array}; each is read once.
    """
    from quantd import _quantd

    request = job_pb2.QuantizeRequest()
    request.MergeFromString(_quantd.request_options(
        tpc=os.fspath(tpc) if tpc is not None else "", mp=_targets(mp),
        bits_override=_overrides(bits_override),
        weights_bits=int(weights_bits),
        activation_storage=activation_storage or "",
        export_formats=_formats(export), gptq=bool(gptq),
        threads=int(threads), report_samples=int(report_samples),
        config=config or ""))
    request.request_id = request_id
    request.onnx_model = model_bytes(model)
    if calibration is None:
        raise TypeError("calibration: an iterable of {input name: array}")
    request.calibration_samples.extend(
        sample_from_arrays(s) for s in calibration)
    if evaluation is not None:
        request.evaluation_samples.extend(
            sample_from_arrays(s) for s in evaluation)
    return request
