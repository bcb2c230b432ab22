// The per-element loops of training (quantizers, regularizer, Adam) on a
// pool: chunks of a fixed size, so each element's arithmetic, the only
// thing computed, is the same on any number of threads.
#ifndef QUANTD_CORE_TRAIN_FOR_EACH_ELEMENT_H_
#define QUANTD_CORE_TRAIN_FOR_EACH_ELEMENT_H_

#include <cstddef>
#include <cstdint>

#include "core/runtime/thread_pool.h"

namespace quantd::train {

inline constexpr int64_t kElementsPerChunk = 4096;

// fn(i) for every i in [0, n), on `pool` when there is one.
template <typename Fn>
void ForEachElement(ThreadPool* pool, size_t n, const Fn& fn) {
  ParallelForChunks(pool, static_cast<int64_t>(n), kElementsPerChunk,
                    [&](int64_t b, int64_t e) {
                      for (int64_t i = b; i < e; ++i) {
                        fn(static_cast<size_t>(i));
                      }
                    });
}

}  // namespace quantd::train

#endif  // QUANTD_CORE_TRAIN_FOR_EACH_ELEMENT_H_
