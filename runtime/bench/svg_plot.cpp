#include "bench/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace llmserve::bench {
namespace {

constexpr double kPanelWidth = 360, kPanelHeight = 280;
constexpr double kLeft = 70, kRight = 20, kTop = 60, kBottom = 50;
const char *const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd"};

std::string escape(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    default: out += c;
    }
  }
  return out;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

// 1, 2 or 5 times a power of ten, at least `value`.
double nice_ceiling(double value) {
  if (!(value > 0))
    return 1;
  const double power = std::pow(10, std::floor(std::log10(value)));
  for (double step : {1.0, 2.0, 5.0, 10.0})
    if (step * power >= value)
      return step * power;
  return 10 * power;
}

std::string panel_svg(const Panel &panel, const std::vector<std::string> &x_labels,
                      const std::string &x_label, double x0) {
  const double width = kPanelWidth - kLeft - kRight;
  const double height = kPanelHeight - kTop - kBottom;
  double y_max = 0;
  for (const Series &s : panel.series)
    for (double y : s.y)
      y_max = std::max(y_max, y);
  y_max = nice_ceiling(y_max);
  const size_t n = x_labels.size();
  auto px = [&](size_t i) {
    return x0 + kLeft + (n > 1 ? width * i / (n - 1) : width / 2);
  };
  auto py = [&](double y) { return kTop + height * (1 - y / y_max); };

  std::string svg = "<text x=\"" + number(x0 + kPanelWidth / 2) +
                    "\" y=\"40\" text-anchor=\"middle\" font-weight=\"bold\">" +
                    escape(panel.title) + "</text>\n";
  for (int tick = 0; tick <= 4; ++tick) {
    const double y = y_max * tick / 4;
    svg += "<line x1=\"" + number(x0 + kLeft) + "\" x2=\"" + number(x0 + kLeft + width) +
           "\" y1=\"" + number(py(y)) + "\" y2=\"" + number(py(y)) +
           "\" stroke=\"#ddd\"/>\n<text x=\"" + number(x0 + kLeft - 6) + "\" y=\"" +
           number(py(y) + 4) + "\" text-anchor=\"end\">" + number(y) + "</text>\n";
  }
  for (size_t i = 0; i < n; ++i)
    svg += "<text x=\"" + number(px(i)) + "\" y=\"" + number(kTop + height + 18) +
           "\" text-anchor=\"middle\">" + escape(x_labels[i]) + "</text>\n";
  svg += "<text x=\"" + number(x0 + kLeft + width / 2) + "\" y=\"" +
         number(kPanelHeight - 8) + "\" text-anchor=\"middle\">" + escape(x_label) +
         "</text>\n<text transform=\"translate(" + number(x0 + 16) + "," +
         number(kTop + height / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
         escape(panel.y_label) + "</text>\n";
  for (size_t k = 0; k < panel.series.size(); ++k) {
    const Series &s = panel.series[k];
    const char *color = kColors[k % std::size(kColors)];
    std::string points;
    for (size_t i = 0; i < std::min(n, s.y.size()); ++i)
      points += number(px(i)) + "," + number(py(s.y[i])) + " ";
    svg += std::string("<polyline fill=\"none\" stroke-width=\"2\" stroke=\"") + color + "\"" +
           (s.dashed ? " stroke-dasharray=\"6,4\"" : "") + " points=\"" + points + "\"/>\n";
    for (size_t i = 0; i < std::min(n, s.y.size()); ++i)
      svg += "<circle r=\"3\" fill=\"" + std::string(color) + "\" cx=\"" + number(px(i)) +
             "\" cy=\"" + number(py(s.y[i])) + "\"><title>" + escape(s.name) + ": " +
             number(s.y[i]) + "</title></circle>\n";
    const double legend_y = kTop + 4 + 16 * k;
    svg += "<line x1=\"" + number(x0 + kLeft + 8) + "\" x2=\"" + number(x0 + kLeft + 28) +
           "\" y1=\"" + number(legend_y) + "\" y2=\"" + number(legend_y) + "\" stroke=\"" +
           color + "\" stroke-width=\"2\"" + (s.dashed ? " stroke-dasharray=\"6,4\"" : "") +
           "/>\n<text x=\"" + number(x0 + kLeft + 32) + "\" y=\"" + number(legend_y + 4) +
           "\">" + escape(s.name) + "</text>\n";
  }
  return svg;
}

} // namespace

std::string render_svg(const std::string &title, const std::string &x_label,
                       const std::vector<std::string> &x_labels,
                       const std::vector<Panel> &panels) {
  const double width = kPanelWidth * std::max<size_t>(1, panels.size());
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + number(width) +
                    "\" height=\"" + number(kPanelHeight) + "\" font-family=\"sans-serif\" "
                    "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
                    "<text x=\"" + number(width / 2) + "\" y=\"20\" text-anchor=\"middle\" "
                    "font-size=\"14\" font-weight=\"bold\">" + escape(title) + "</text>\n";
  for (size_t i = 0; i < panels.size(); ++i)
    svg += panel_svg(panels[i], x_labels, x_label, kPanelWidth * i);
  return svg + "</svg>\n";
}

} // namespace llmserve::bench
