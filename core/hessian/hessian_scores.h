// The HMSE Hessian scores' type, apart from their computation
// (weights_hessian.h), so that what only carries them (PtqOptions) does not
// depend on the estimator's headers.
#ifndef QUANTD_CORE_HESSIAN_HESSIAN_SCORES_H_
#define QUANTD_CORE_HESSIAN_HESSIAN_SCORES_H_

#include <map>
#include <string>
#include <vector>

namespace quantd::hessian {

// Initializer name -> one score per element, in the initializer's layout.
using HessianScores = std::map<std::string, std::vector<float>>;

}  // namespace quantd::hessian

#endif  // QUANTD_CORE_HESSIAN_HESSIAN_SCORES_H_
