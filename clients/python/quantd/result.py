"""quantd.Result: what a job produced (the QuantizeResult message)."""

import html
import json
import os


class Result:
    """The outcome of quantd.quantize or quantd.Client.quantize.

    qdq_model: bytes of the QDQ ONNX model (ONNX Runtime runs it);
    mctq_model: bytes of the MCTQ model (export=["mctq"]), else b"";
    report: report.json as a dict; report_html: report.html;
    quantized_graph: the quantd.v1.QuantizedGraph message;
    warnings: what the job warned about; proto: the QuantizeResult.
    save(dir) writes the files `quantctl quantize --out dir` writes.
    """

    def __init__(self, proto, warnings=()):
        self.proto = proto
        self.warnings = list(warnings)
        self._report = None

    @property
    def qdq_model(self):
        return self.proto.qdq_onnx

    @property
    def mctq_model(self):
        return self.proto.mctq_onnx

    @property
    def quantized_graph(self):
        return self.proto.quantized_graph

    @property
    def report(self):
        if self._report is None:
            self._report = json.loads(self.proto.report_json)
        return self._report

    @property
    def report_html(self):
        return self.proto.report_html

    @property
    def tpc(self):
        return self.proto.tpc

    @property
    def output_sqnr_db(self):
        return self.proto.output_sqnr_db

    def save(self, directory):
        """Writes model.qdq.onnx (and model.mctq.onnx), quantized_graph.pb,
        quantized_graph.json, report.json and report.html into `directory`
        (created if missing), each atomically, as quantctl does. Returns the
        paths written."""
        from quantd import _quantd

        directory = os.fspath(directory)
        names = _quantd.write_result(directory,
                                     self.proto.SerializeToString())
        return [os.path.join(directory, n) for n in names]

    def __repr__(self):
        return (f"<quantd.Result tpc={self.tpc} "
                f"output_sqnr_db={self.output_sqnr_db:.2f} "
                f"qdq_model={len(self.qdq_model)} bytes>")

    def _summary_rows(self):
        report = self.report
        layers = report.get("layers", [])
        quantized = sum(1 for l in layers
                        if l.get("weights_bits") or l.get("activation_bits"))
        ru = report.get("resource_utilization", {})
        base = report.get("baseline_8bit", {})
        rows = [("TPC", self.tpc),
                ("output SQNR", f"{self.output_sqnr_db:.2f} dB"),
                ("nodes quantized", f"{quantized} of {len(layers)}")]
        if "weights_memory_bytes" in ru:
            rows.append(("weights", f"{ru['weights_memory_bytes']:.0f} bytes "
                         f"(8-bit: {base.get('weights_memory_bytes', 0):.0f})"))
        rows.extend(("warning", w) for w in self.warnings)
        return rows

    def _repr_html_(self):
        """A summary table and report.html in an iframe (Jupyter): the
        report's own styles stay inside it."""
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
            f"<td style='text-align:left'>{html.escape(str(v))}</td></tr>"
            for k, v in self._summary_rows())
        frame = (f"<iframe srcdoc=\"{html.escape(self.report_html)}\" "
                 "style='width:100%;height:640px;border:1px solid #ddd'>"
                 "</iframe>") if self.report_html else ""
        return f"<div><table>{rows}</table>{frame}</div>"
