// run_job for the Python module: one QuantizeRequest through RunQuantizeJob
// (core/pipeline/job/quantize_job.h) on a thread of its own, while the
// calling Python thread waits with the GIL released.
//
// The caller's thread delivers the job's progress and warnings to a Python
// callable (so a notebook's widgets and tqdm see them on the thread that
// called), checks for signals between deliveries (Ctrl-C cancels the job) and
// re-raises whatever the callback or a signal raised once the job has
// stopped. A failed job raises quantd.QuantdError(code name, message).
#ifndef QUANTD_CLIENTS_PYTHON_MODULE_JOB_RUNNER_H_
#define QUANTD_CLIENTS_PYTHON_MODULE_JOB_RUNNER_H_

#include <string>

#include "absl/status/status.h"
#include "pybind11/pybind11.h"

namespace quantd::python {

// Raises quantd.QuantdError(StatusCodeToString(code), message).
[[noreturn]] void ThrowStatus(const absl::Status& status);

// request: a serialized v1::QuantizeRequest. on_event: None or a callable
// (kind, stage, fraction, message), kind "progress" or "warning". Returns
// the serialized v1::QuantizeResult.
pybind11::bytes RunJob(const std::string& request, pybind11::object on_event);

}  // namespace quantd::python

#endif  // QUANTD_CLIENTS_PYTHON_MODULE_JOB_RUNNER_H_
