#include "tests/farm/farm_testing.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/graph/onnx_export.h"
#include "core/io/file_util.h"
#include "core/io/sample_set.h"
#include "core/pipeline/example_model.h"
#include "core/util/status_macros.h"
#include "tests/integration/server_process.h"

extern char** environ;

namespace quantd::testing {

absl::StatusOr<std::string> WriteFarmManifest(const std::string& dir, int sets,
                                              int images) {
  ASSIGN_OR_RETURN(std::string model, ExportOnnx(MakeExampleCnn()));
  RETURN_IF_ERROR(WriteFileAtomically(dir + "/example_cnn.onnx", model));
  std::string manifest;
  for (int k = 1; k <= sets; ++k) {
    const std::string calib = absl::StrCat("calib", k);
    auto samples = MakeExampleImages(images, static_cast<uint64_t>(k));
    for (size_t i = 0; i < samples.size(); ++i) {
      RETURN_IF_ERROR(WriteSample(absl::StrCat(dir, "/", calib),
                                  absl::StrFormat("s%03d", i), samples[i]));
    }
    for (const char* storage : {"uint8", "int8"}) {
      // Relative paths: the runner resolves them against the manifest.
      absl::StrAppend(&manifest, "{\"id\":\"job-", k, "-", storage,
                      "\",\"model\":\"example_cnn.onnx\",\"calib\":\"", calib,
                      "\",\"tpc\":\"imx500@4.0\",\"options\":{"
                      "\"activation_storage\":\"",
                      storage, "\"}}\n");
    }
  }
  const std::string path = dir + "/manifest.jsonl";
  RETURN_IF_ERROR(WriteFileAtomically(path, manifest));
  return path;
}

std::string QuantctlBinary() {
  return BuildDir() + "/clients/quantctl/quantctl";
}

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(
    std::vector<std::string> argv_storage) {
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  int fds[2];
  if (pipe(fds) != 0) return absl::InternalError("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    execve(argv[0], argv.data(), environ);
    _exit(127);
  }
  close(fds[1]);
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  child->pid_ = pid;
  ChildProcess* raw = child.get();
  const int fd = fds[0];
  child->reader_ = std::thread([raw, fd] {
    char buffer[4096];
    ssize_t n;
    while ((n = read(fd, buffer, sizeof(buffer))) > 0) {
      absl::MutexLock lock(&raw->mu_);
      raw->output_.append(buffer, static_cast<size_t>(n));
    }
    close(fd);
    int status = 0;
    waitpid(raw->pid_, &status, 0);
    absl::MutexLock lock(&raw->mu_);
    raw->exited_ = true;
    raw->wait_status_ = status;
  });
  return child;
}

ChildProcess::~ChildProcess() {
  bool exited;
  {
    absl::MutexLock lock(&mu_);
    exited = exited_;
  }
  if (!exited) kill(pid_, SIGKILL);
  if (reader_.joinable()) reader_.join();
}

void ChildProcess::Signal(int signal) { kill(pid_, signal); }

absl::StatusOr<int> ChildProcess::Wait(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  if (!mu_.AwaitWithTimeout(absl::Condition(&exited_), timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat("still running after ", absl::FormatDuration(timeout)));
  }
  if (WIFSIGNALED(wait_status_)) return -WTERMSIG(wait_status_);
  return WEXITSTATUS(wait_status_);
}

std::string ChildProcess::Output() const {
  absl::MutexLock lock(&mu_);
  return output_;
}

bool PollUntil(const std::function<bool()>& condition, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

std::vector<std::string> FinishedJobs(const std::string& dir) {
  std::vector<std::string> jobs;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    if (std::filesystem::exists(entry.path() / "result.json", ec)) {
      jobs.push_back(name);
    }
  }
  std::sort(jobs.begin(), jobs.end());
  return jobs;
}

}  // namespace quantd::testing
