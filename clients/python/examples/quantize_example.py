#!/usr/bin/python3
"""Quantizes an ONNX model, in-process or on a quantd server.

    PYTHONPATH=<build>/clients/python \
      /usr/bin/python3 clients/python/examples/quantize_example.py \
      --model model.onnx --tpc imx500@4.1 --calib samples/ --out out/ \
      [--server localhost:50051 --token-file token --tls-ca ca.pem]

The sample folder follows DESIGN.md: one subfolder per sample holding one
.npy per model input (named after the input), or plain .npy files for a
single-input model (then --input names it). Samples are read lazily.
"""

import argparse
import os
import sys

import numpy as np

import quantd


def samples(folder, single_input):
    for entry in sorted(os.listdir(folder)):
        path = os.path.join(folder, entry)
        if os.path.isdir(path):
            yield {os.path.splitext(f)[0]: np.load(os.path.join(path, f))
                   for f in sorted(os.listdir(path)) if f.endswith(".npy")}
        elif entry.endswith(".npy"):
            if not single_input:
                sys.exit("plain .npy samples need --input NAME")
            yield {single_input: np.load(path)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--tpc", default="imx500")
    parser.add_argument("--calib", required=True)
    parser.add_argument("--input", help="input name for plain .npy samples")
    parser.add_argument("--out", required=True)
    parser.add_argument("--mp", help="targets, e.g. weights=0.75")
    parser.add_argument("--export", default="qdq", help="qdq, mctq or both")
    parser.add_argument("--server", help="HOST:PORT (default: in-process)")
    parser.add_argument("--token-file")
    parser.add_argument("--tls-ca", help="CA certificate (PEM) for TLS")
    parser.add_argument("--timeout", type=float, default=3600)
    args = parser.parse_args()

    def show(p):
        print(f"  {p.stage:16s} {100 * p.fraction:5.1f}%  {p.message}")

    options = dict(calibration=samples(args.calib, args.input), tpc=args.tpc,
                   mp=args.mp, export=args.export, progress=show)
    try:
        if args.server:
            with quantd.Client(args.server, token_file=args.token_file,
                               tls_ca=args.tls_ca) as client:
                result = client.quantize(args.model, timeout=args.timeout,
                                         **options)
        else:
            result = quantd.quantize(args.model, **options)
    except quantd.QuantdError as e:
        sys.exit(f"quantize failed: {e}")
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    result.save(args.out)
    print(f"wrote {args.out} (output SQNR {result.output_sqnr_db:.2f} dB)")


if __name__ == "__main__":
    main()
