// Runs a job given as files (clients/batch/job_files.h) the way quantctl's
// job verbs do: in-process on a pool of --threads (default: all cores), or
// on a quantd server when `channel.target` is set; progress and warnings go
// to `bar`. An infinite `deadline` means none.
#ifndef QUANTD_CLIENTS_QUANTCTL_RUN_JOB_H_
#define QUANTD_CLIENTS_QUANTCTL_RUN_JOB_H_

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "clients/batch/job_files.h"
#include "clients/cpp/client.h"
#include "clients/quantctl/progress_bar.h"
#include "quantd/v1/job.pb.h"

namespace quantd::quantctl {

absl::StatusOr<v1::QuantizeResult> RunJob(const JobFiles& job,
                                          const client::ChannelOptions& channel,
                                          absl::Duration deadline,
                                          ProgressBar* bar);

}  // namespace quantd::quantctl

#endif  // QUANTD_CLIENTS_QUANTCTL_RUN_JOB_H_
