"""quantd: post-training quantization of ONNX models, in this process or on
a quantd server.

    import quantd
    r = quantd.quantize("model.onnx", calibration=({"x": a} for a in arrays),
                        tpc="imx500@4.1", mp={"weights": 0.75}, threads=2)
    r.qdq_model      # bytes of the QDQ ONNX model
    r.report         # report.json as a dict
    r.save("out/")   # the files `quantctl quantize --out out/` writes

    with quantd.Client("host:50051", token_file="token", tls_ca="ca.pem") as c:
        r = c.quantize("model.onnx", calibration=..., tpc="imx500@4.1",
                       progress=print)

quantd.job_options() lists the job options (the keyword arguments of
quantize, the same as quantctl's flags and batch manifests' keys).
Failures raise quantd.QuantdError (.code such as "INVALID_ARGUMENT",
.message naming the field or node). quantd.__version__ and
quantd.__commit__ name the build, as `quantctl --version` does.
docs/python.md has the details.
"""

from quantd._request import job_options
from quantd._version import __commit__, __version__
from quantd.errors import QuantdError
from quantd.local import quantize
from quantd.progress import Progress
from quantd.remote import Client
from quantd.result import Result

__all__ = ["Client", "Progress", "QuantdError", "Result", "job_options",
           "quantize"]
