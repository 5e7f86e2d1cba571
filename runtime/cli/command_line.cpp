#include "cli/command_line.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <functional>
#include <stdexcept>

namespace llmserve::cli {
namespace {

// Adds to `option` a validator that throws "OPTION 'VALUE': why" for a value
// `why_wrong` finds wrong. Thrown, not returned: CLI11 would word a returned
// message "OPTION: why".
CLI::Option *check(CLI::Option *option,
                   std::function<std::string(const std::string &)> why_wrong) {
  const std::string name = option->get_name();
  return option->check(CLI::Validator(
      [name, why_wrong](std::string &value) {
        if (const std::string why = why_wrong(value); !why.empty())
          throw std::invalid_argument(name + " '" + value + "': " + why);
        return std::string();
      },
      ""));
}

// An option given twice takes the last value, where CLI11 would refuse it; a
// list option takes them all.
void take_last(CLI::App &app) {
  for (CLI::Option *option : app.get_options())
    option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  for (CLI::App *command : app.get_subcommands({}))
    take_last(*command);
}

int usage_error(const CLI::App &app, std::string message) {
  // The error is about the last command named on the command line.
  const CLI::App *command = &app;
  while (!command->get_subcommands().empty())
    command = command->get_subcommands().front();
  const bool has_commands = command->get_require_subcommand_min() > 0;
  if (has_commands && !command->remaining().empty()) { // CLI11 would say one is required
    const std::string unknown = command->remaining().front();
    message = (unknown[0] == '-' ? "unknown option '" : "unknown command '") + unknown + "'";
  }
  std::fprintf(stderr, "%s: %s\n", command_name(*command).c_str(), message.c_str());
  if (has_commands) {
    // A command of commands: its help lists them.
    const CLI::App *parent = command->get_parent();
    std::fputs(command->help(parent ? command_name(*parent) : "").c_str(), stderr);
    return 2;
  }
  CLI::Formatter usage;
  usage.label("Usage", "usage");
  std::fprintf(stderr, "%sRun with --help for more information.\n",
               usage.make_usage(command, command_name(*command)).c_str());
  return 2;
}

} // namespace

std::optional<int> parse(CLI::App &app, int argc, char **argv) {
  app.get_formatter()->label("Usage", "usage"); // subcommands share the formatter
  take_last(app);
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::CallForHelp &) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError &e) {
    return usage_error(app, e.what());
  } catch (const std::invalid_argument &e) {
    return usage_error(app, e.what());
  }
}

std::string command_name(const CLI::App &app) {
  const CLI::App *parent = app.get_parent();
  return parent ? command_name(*parent) + " " + app.get_name() : app.get_name();
}

namespace {

// from_chars reads no leading '+': past one, unless a sign follows it.
const char *skip_plus(const char *begin, const char *end) {
  if (end - begin >= 2 && *begin == '+' && begin[1] != '-' && begin[1] != '+')
    return begin + 1;
  return begin;
}

} // namespace

std::optional<int64_t> to_integer(const std::string &text) {
  const char *end = text.data() + text.size(), *begin = skip_plus(text.data(), end);
  int64_t value = 0;
  const auto [stop, error] = std::from_chars(begin, end, value);
  if (begin == end || stop != end || error != std::errc())
    return std::nullopt;
  return value;
}

std::optional<double> to_number(const std::string &text) {
  // from_chars reads "inf" and "infinity", and in the general format no
  // hexadecimal.
  const char *end = text.data() + text.size(), *begin = skip_plus(text.data(), end);
  double value = 0;
  const auto [stop, error] = std::from_chars(begin, end, value, std::chars_format::general);
  if (begin == end || stop != end || error != std::errc() || std::isnan(value))
    return std::nullopt;
  return value;
}

CLI::Option *integer_in(CLI::Option *option, int64_t min, int64_t max) {
  // The value goes on as its canonical decimal, so that CLI11, which reads
  // "010" as octal, stores what the check read.
  const std::string name = option->get_name();
  return option->transform(CLI::Validator(
      [name, min, max](std::string &text) {
        const std::optional<int64_t> value = to_integer(text);
        std::string why;
        if (!value)
          why = "not an integer";
        else if (*value < min || *value > max)
          why = "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
        if (!why.empty())
          throw std::invalid_argument(name + " '" + text + "': " + why);
        text = std::to_string(*value);
        return std::string();
      },
      ""));
}

CLI::Option *number(CLI::Option *option) {
  return check(option, [](const std::string &text) -> std::string {
    return to_number(text) ? "" : "not a number";
  });
}

CLI::Option *positive(CLI::Option *option, double max) {
  return check(option, [max](const std::string &text) -> std::string {
    const std::optional<double> number = to_number(text);
    if (!number)
      return "not a number";
    const double value = *number;
    if (value > 0 && value <= max)
      return "";
    if (std::isinf(max))
      return "must be positive";
    char bound[32];
    std::snprintf(bound, sizeof bound, "%g", max);
    return "must be in (0, " + std::string(bound) + "]";
  });
}

CLI::Option *one_of(CLI::Option *option, const std::vector<std::string> &values) {
  std::string expected = values.front();
  for (size_t i = 1; i < values.size(); ++i)
    expected += (i + 1 == values.size() ? " or " : ", ") + values[i];
  option->type_name(CLI::detail::join(values, "|"));
  return check(option, [values, expected](const std::string &text) -> std::string {
    return std::count(values.begin(), values.end(), text) ? "" : "expected " + expected;
  });
}

} // namespace llmserve::cli
