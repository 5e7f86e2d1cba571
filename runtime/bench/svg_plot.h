// Line charts as a standalone SVG file: one or more panels side by side over
// the same categorical x axis (e.g. concurrency 1, 4, 16, 32, 64).
#ifndef LLMSERVE_BENCH_SVG_PLOT_H
#define LLMSERVE_BENCH_SVG_PLOT_H

#include <string>
#include <vector>

namespace llmserve::bench {

struct Series {
  std::string name;
  std::vector<double> y; // one per x label
  bool dashed = false;
};

struct Panel {
  std::string title;
  std::string y_label;
  std::vector<Series> series;
};

std::string render_svg(const std::string &title, const std::string &x_label,
                       const std::vector<std::string> &x_labels,
                       const std::vector<Panel> &panels);

} // namespace llmserve::bench

#endif // LLMSERVE_BENCH_SVG_PLOT_H
