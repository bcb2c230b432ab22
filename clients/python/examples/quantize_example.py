#!/usr/bin/python3
"""Quantizes an ONNX model on a quantd server and writes the results.

    PYTHONPATH=<build>/python:clients/python \
      /usr/bin/python3 clients/python/examples/quantize_example.py \
      --server localhost:50051 --model model.onnx --tpc imx500@4.0 \
      --calib samples/ --out out/

The sample folder follows DESIGN.md: one subfolder per sample holding one
.npy per model input (named after the input), or plain .npy files for a
single-input model (then --input names it).
"""

import argparse
import os
import sys

import numpy as np

from quantd_client import Client, QuantdError


def load_samples(folder, single_input):
    samples = []
    for entry in sorted(os.listdir(folder)):
        path = os.path.join(folder, entry)
        if os.path.isdir(path):
            samples.append({
                os.path.splitext(f)[0]: np.load(os.path.join(path, f))
                for f in sorted(os.listdir(path)) if f.endswith(".npy")
            })
        elif entry.endswith(".npy"):
            if not single_input:
                sys.exit("plain .npy samples need --input NAME")
            samples.append({single_input: np.load(path)})
    return samples


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--tpc", default="imx500")
    parser.add_argument("--calib", required=True)
    parser.add_argument("--input", help="input name for plain .npy samples")
    parser.add_argument("--out", required=True)
    parser.add_argument("--token", help="bearer token")
    parser.add_argument("--ca", help="CA certificate (PEM) for TLS")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--export", default="qdq",
                        help="ONNX formats: qdq, mctq or qdq,mctq")
    args = parser.parse_args()

    root = open(args.ca, "rb").read() if args.ca else None
    with Client(args.server, root_certificates=root, token=args.token) as c:
        with open(args.model, "rb") as f:
            model = f.read()
        try:
            result = None
            for event in c.quantize(onnx_model=model, tpc=args.tpc,
                                    samples=load_samples(args.calib,
                                                         args.input),
                                    timeout=args.timeout,
                                    export=args.export.split(",")):
                kind = event.WhichOneof("event")
                if kind == "accepted":
                    print(f"job {event.job_id} accepted "
                          f"(tpc {event.accepted.tpc}, queue position "
                          f"{event.accepted.queue_position})")
                elif kind == "progress":
                    p = event.progress
                    print(f"  {p.stage:16s} {100 * p.fraction:5.1f}%  "
                          f"{p.message}")
                elif kind == "warning":
                    print(f"  warning: {event.warning.message}")
                elif kind == "result":
                    result = event.result
        except QuantdError as e:
            sys.exit(f"quantize failed: {e}")
    os.makedirs(args.out, exist_ok=True)
    for name, data in (("model.qdq.onnx", result.qdq_onnx),
                       ("model.mctq.onnx", result.mctq_onnx)):
        if data:
            with open(os.path.join(args.out, name), "wb") as f:
                f.write(data)
    with open(os.path.join(args.out, "quantized_graph.pb"), "wb") as f:
        f.write(result.quantized_graph.SerializeToString())
    with open(os.path.join(args.out, "report.json"), "w") as f:
        f.write(result.report_json)
    print(f"wrote {args.out} (output SQNR {result.output_sqnr_db:.2f} dB)")


if __name__ == "__main__":
    main()
