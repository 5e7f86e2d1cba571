#include "bench/arrivals.h"

#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

namespace llmserve::bench {

std::vector<double> arrival_times(int64_t num_requests, double rate, double burstiness,
                                  uint64_t seed) {
  if (!(rate > 0))
    throw std::invalid_argument("--request-rate " + std::to_string(rate) +
                                ": expected a positive rate or inf");
  if (!(burstiness > 0) || std::isinf(burstiness))
    throw std::invalid_argument("--burstiness " + std::to_string(burstiness) +
                                ": expected a positive number");
  std::vector<double> times(num_requests, 0.0);
  if (std::isinf(rate))
    return times;
  std::mt19937_64 rng(seed);
  std::gamma_distribution<double> gap(burstiness, 1.0 / (rate * burstiness));
  double t = 0.0;
  for (double &time : times) {
    time = t;
    t += gap(rng);
  }
  return times;
}

} // namespace llmserve::bench
