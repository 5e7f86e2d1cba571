// When each request of a serving benchmark is sent: vLLM's arrival process.
#ifndef LLMSERVE_BENCH_ARRIVALS_H
#define LLMSERVE_BENCH_ARRIVALS_H

#include <cstdint>
#include <vector>

namespace llmserve::bench {

// Send times in seconds from the start, one per request. Gaps are drawn from
// a gamma distribution with mean 1/rate and shape `burstiness`: 1 is a
// Poisson process, below 1 burstier, above 1 more regular. An infinite rate
// sends everything at time 0. Throws std::invalid_argument for a rate or a
// burstiness that is not positive.
std::vector<double> arrival_times(int64_t num_requests, double rate, double burstiness,
                                  uint64_t seed);

} // namespace llmserve::bench

#endif // LLMSERVE_BENCH_ARRIVALS_H
