// The parts of a quantize job that admission reserves memory for only when
// the job reaches them. A quality target met as configured (or early) never
// holds what its ranking, its equalization trial and its GPTQ trial would:
// reserving them up front held up to twice the job's peak from the budget
// (docs/service.md, the memory estimate).
#ifndef QUANTD_CORE_PIPELINE_MEMORY_JOB_MEMORY_STAGE_H_
#define QUANTD_CORE_PIPELINE_MEMORY_JOB_MEMORY_STAGE_H_

namespace quantd {

// A job may reach any of them (each more than once: the equalization
// trial searches again); the reservation is the estimate with every stage
// reached so far (JobMemoryReservation).
enum class JobMemoryStage {
  kAdmitted,            // the job without the quality target's parts below
  kTargetRanking,       // the upgrade ranking's analysis
  kTargetEqualization,  // the data channel equalization trial
  kTargetGptq,          // the GPTQ trial up to its checkpoint
  kTargetGptqRest,      // the GPTQ trial past its checkpoint
};
inline constexpr int kJobMemoryStages = 5;

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_MEMORY_JOB_MEMORY_STAGE_H_
