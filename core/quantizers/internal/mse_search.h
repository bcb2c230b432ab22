// The per-channel symmetric MSE search's candidate loop without a call per
// candidate: the candidates' grids in one vector pass, then PrunedArgMin's
// loop (search.cc) on QuantizedMseExceeds and QuantizedMse directly.
#ifndef QUANTD_CORE_QUANTIZERS_INTERNAL_MSE_SEARCH_H_
#define QUANTD_CORE_QUANTIZERS_INTERNAL_MSE_SEARCH_H_

#include <cstdint>

#include "core/quantizers/internal/kernels.h"

namespace quantd::quantizers::internal {

// out[i] = SymmetricGrid<double, double>(t[i], n_bits, true) for i < k, bit
// for bit (four at a time with AVX2: the same IEEE operations).
void SymmetricGrids(const double* t, int64_t k, int n_bits, Grid<double>* out);

// The first index of the least QuantizedMse(x, n, grid of cands[i]) over
// k candidates and that loss, skipping those QuantizedMseExceeds proves
// worse (from m extremes of RowExtremes): SymmetricMinimizePerChannel's
// PrunedArgMin for the MSE of a float64 row. -1 where an evaluated loss is
// not finite (the caller then runs MCT's loop).
int PrunedMseArgMin(const double* x, int64_t n, const double* extremes,
                    int64_t m, const double* cands, int k, int n_bits,
                    double* best_loss);

}  // namespace quantd::quantizers::internal

#endif  // QUANTD_CORE_QUANTIZERS_INTERNAL_MSE_SEARCH_H_
