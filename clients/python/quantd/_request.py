"""QuantizeRequest from Python values: a model, samples as numpy arrays and
the job options by keyword, in the text forms `quantctl quantize` takes,
turned into request fields by the engine's one table of job options
(clients/batch/job_options.h, through quantd._quantd)."""

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


def job_options():
    """The job options quantd.quantize and quantd.Client.quantize take as
    keyword arguments: [(keyword, value name, help)], from the one table
    that `quantctl quantize` flags and batch manifests also use
    (clients/batch/job_options.h). A switch has no value name."""
    from quantd import _quantd

    return [tuple(o) for o in _quantd.job_options()]


def _option_text(value):
    """A keyword argument's value as the option's text form: a dict is
    "key=value,..." ({"weights": 0.75} -> "weights=0.75"), a list, tuple or
    set is "a,b", a bool is "true"/"false", anything else str()."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return ",".join(str(v) for v in value)
    return str(value)


def option_texts(options):
    """[(keyword, text form)] of the options given; None, False, "" and 0
    mean the default and are left out. An unknown keyword is a TypeError
    that lists the known ones."""
    known = {o[0] for o in job_options()}
    texts = []
    for keyword, value in options.items():
        if keyword not in known:
            raise TypeError(f"unknown job option {keyword!r} (job options: "
                            f"{', '.join(sorted(known))})")
        if value is None or value is False or (
                not isinstance(value, bool) and value in ("", 0)):
            continue
        texts.append((keyword, _option_text(value)))
    return texts


def build_request(model, calibration, *, tpc, evaluation=None,
                  request_id="", **options):
    """The QuantizeRequest for quantd.quantize and quantd.Client.quantize.

    calibration and evaluation: iterables (lists, generators) of
    {input name: numpy array}; each is read once. calibration may be None
    with the generated_calibration option (the job generates the images). options: job options by
    keyword (job_options()), applied by the engine's own table.
    """
    from quantd import _quantd

    request = job_pb2.QuantizeRequest()
    request.MergeFromString(_quantd.request_options(
        os.fspath(tpc) if tpc is not None else "", option_texts(options)))
    request.request_id = request_id
    request.onnx_model = model_bytes(model)
    if calibration is None:
        if not request.HasField("generated_calibration"):
            raise TypeError("calibration: an iterable of {input name: array} "
                            "(or None with generated_calibration=N)")
    else:
        request.calibration_samples.extend(
            sample_from_arrays(s) for s in calibration)
    if evaluation is not None:
        request.evaluation_samples.extend(
            sample_from_arrays(s) for s in evaluation)
    return request
