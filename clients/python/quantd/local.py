"""quantd.quantize: a job run in this process by the engine quantd runs."""

from quantd import _request
from quantd.progress import Progress
from quantd.result import Result
from quantd.v1 import job_pb2


def quantize(model, calibration, *, tpc, evaluation=None, progress=None,
             **options):
    """Quantizes an ONNX model in this process; returns a quantd.Result.

    model: a path, the model's bytes or an onnx.ModelProto.
    calibration: an iterable (list, generator) of {input name: numpy array},
        or None with generated_calibration=N (or "N,iterations=200,..."):
        the job then generates N images from the model's BatchNormalization
        statistics (docs/data_generation.md); evaluation: the same, held out
        for the report (default: the first report_samples calibration
        samples).
    tpc: "imx500@4.1", "imx500@4", "imx500", "default", or a path to a TPC
        file (MCT JSON or text proto).
    progress: called with a quantd.Progress as the job advances, on this
        thread; an exception it raises cancels the job and is re-raised.
    options: the job options of `quantctl quantize` and batch manifests,
        by keyword (quantd.job_options() lists them with their help), e.g.
        mp={"weights": 0.75} (or "weights=0.75"), weights_bits=4,
        bits_override={"type:Conv": 4, "scope:head@activation": 16},
        keep_float=["name:conv_3"], activation_storage="uint8",
        export=["qdq", "mctq"], gptq=True, threads=2, report_samples=-1
        (all), config="z_threshold: 8". None, False, "" and 0 mean the
        default. A value is checked by the same code as the flag's, and an
        error names the keyword.

    The GIL is released while the job runs; Ctrl-C cancels it. Raises
    quantd.QuantdError (code, message) when the job fails.
    """
    from quantd import _quantd

    request = _request.build_request(model, calibration, tpc=tpc,
                                     evaluation=evaluation, **options)
    warnings = []

    def on_event(kind, stage, fraction, message):
        if kind == "warning":
            warnings.append(message)
        elif progress is not None:
            progress(Progress(stage, fraction, message))

    data = _quantd.run_job(request.SerializeToString(), on_event)
    return Result(job_pb2.QuantizeResult.FromString(data), warnings)
