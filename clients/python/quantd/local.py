"""quantd.quantize: a job run in this process by the engine quantd runs."""

from quantd import _request
from quantd.progress import Progress
from quantd.result import Result
from quantd.v1 import job_pb2


def quantize(model, calibration, *, tpc, evaluation=None, mp=None,
             bits_override=None, weights_bits=0, activation_storage="",
             export=None, gptq=False, threads=0, report_samples=0, config="",
             progress=None):
    """Quantizes an ONNX model in this process; returns a quantd.Result.

    model: a path, the model's bytes or an onnx.ModelProto.
    calibration: an iterable (list, generator) of {input name: numpy array};
        evaluation: the same, held out for the report (default: the first
        report_samples calibration samples; -1 = all).
    tpc: "imx500@4.1", "imx500@4", "imx500", "default", or a path to a TPC
        file (MCT JSON or text proto).
    mp: mixed-precision targets, {"weights": 0.75} (fractions of the 8-bit
        figures: weights, activation, total, bops; absolute: weights_bytes,
        activation_bytes, total_bytes, bops_count) or "weights=0.75".
    bits_override: {"type:Conv": 4, "name:conv_3": 2,
        "scope:head@activation": 16} or its text form.
    weights_bits: every kernel at this many bits; export: "qdq", "mctq" or
        both; activation_storage: "int8" (default), "uint8" or "auto";
        gptq: fine-tune rounding; threads: 0 = every core; config:
        QuantizationConfig in protobuf text format ("z_threshold: 8").
    progress: called with a quantd.Progress as the job advances, on this
        thread; an exception it raises cancels the job and is re-raised.

    The GIL is released while the job runs; Ctrl-C cancels it. Raises
    quantd.QuantdError (code, message) when the job fails.
    """
    from quantd import _quantd

    request = _request.build_request(
        model, calibration, tpc=tpc, evaluation=evaluation, mp=mp,
        bits_override=bits_override, weights_bits=weights_bits,
        activation_storage=activation_storage, export=export, gptq=gptq,
        threads=threads, report_samples=report_samples, config=config)
    warnings = []

    def on_event(kind, stage, fraction, message):
        if kind == "warning":
            warnings.append(message)
        elif progress is not None:
            progress(Progress(stage, fraction, message))

    data = _quantd.run_job(request.SerializeToString(), on_event)
    return Result(job_pb2.QuantizeResult.FromString(data), warnings)
