#include "clients/python/module/job_runner.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/cpu_count.h"
#include "core/runtime/progress.h"
#include "core/runtime/thread_pool.h"
#include "core/tpc/registry.h"

namespace py = pybind11;

namespace quantd::python {
namespace {

// How often the waiting Python thread wakes to check for signals when the job
// reports nothing: Ctrl-C is answered within this time.
constexpr std::chrono::milliseconds kSignalPoll{100};

struct Event {
  const char* kind;  // "progress" | "warning"
  Progress progress;
};

// The job's side: queues events and the end of the job for the Python thread.
class EventQueue final : public ProgressSink {
 public:
  void Report(const Progress& progress) override {
    Push({"progress", progress});
  }
  void Warn(absl::string_view message) override {
    Push({"warning", {"", 0, std::string(message)}});
  }
  void Finish() {
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = true;
    cv_.notify_all();
  }
  // Waits up to `timeout` for events or the end; moves the events out.
  // Returns true once the job has finished and every event was taken.
  bool Wait(std::chrono::milliseconds timeout, std::deque<Event>* out) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return finished_ || !events_.empty(); });
    out->swap(events_);
    events_.clear();
    return finished_ && out->empty();
  }

 private:
  void Push(Event event) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(event));
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_;
  bool finished_ = false;
};

const TpcRegistry& Registry() {
  static const TpcRegistry* registry = [] {
    auto* r = new TpcRegistry();
    absl::Status st = r->AddBuiltins();
    if (!st.ok()) ThrowStatus(st);
    return r;
  }();
  return *registry;
}

}  // namespace

void ThrowStatus(const absl::Status& status) {
  py::object error = py::module_::import("quantd.errors").attr("QuantdError");
  py::tuple args = py::make_tuple(absl::StatusCodeToString(status.code()),
                                  std::string(status.message()));
  PyErr_SetObject(error.ptr(), args.ptr());
  throw py::error_already_set();
}

py::bytes RunJob(const std::string& request_bytes, py::object on_event) {
  v1::QuantizeRequest request;
  if (!request.ParseFromString(request_bytes)) {
    ThrowStatus(absl::InvalidArgumentError("request: not a QuantizeRequest"));
  }
  const TpcRegistry& registry = Registry();
  const int threads =
      request.num_threads() > 0 ? request.num_threads() : AvailableCpus();
  EventQueue queue;
  CancellationToken cancel;
  absl::StatusOr<v1::QuantizeResult> result = absl::UnknownError("not run");
  std::string result_bytes;
  std::optional<py::error_already_set> raised;  // from the callback or Ctrl-C
  std::thread worker;
  {
    py::gil_scoped_release release;
    worker = std::thread([&] {
      {
        // The job's thread works in ParallelFor too: N threads = N-1 workers.
        ThreadPool pool(threads - 1);
        JobContext context;
        context.registry = &registry;
        context.pool = &pool;
        context.cancel = &cancel;
        context.progress = &queue;
        try {
          result = RunQuantizeJob(request, context);
          if (result.ok()) result_bytes = result->SerializeAsString();
        } catch (const std::exception& e) {  // e.g. std::bad_alloc
          result = absl::InternalError(e.what());
        }
      }
      queue.Finish();
    });
  }
  std::deque<Event> events;
  while (true) {
    bool done;
    {
      py::gil_scoped_release release;
      done = queue.Wait(kSignalPoll, &events);
    }
    for (const Event& e : events) {
      if (raised.has_value() || on_event.is_none()) break;
      try {
        on_event(e.kind, e.progress.stage, e.progress.fraction,
                 e.progress.message);
      } catch (py::error_already_set& error) {
        raised.emplace(std::move(error));
        cancel.Cancel(absl::CancelledError("the progress callback raised"));
      }
    }
    if (!raised.has_value() && PyErr_CheckSignals() != 0) {
      raised.emplace();  // takes the pending KeyboardInterrupt
      cancel.Cancel(absl::CancelledError("interrupted"));
    }
    if (done) break;
  }
  {
    py::gil_scoped_release release;
    worker.join();
  }
  if (raised.has_value()) throw std::move(*raised);
  if (!result.ok()) ThrowStatus(result.status());
  return py::bytes(result_bytes);
}

}  // namespace quantd::python
