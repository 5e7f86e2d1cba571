// Command lines of the runtime's tools (llmrun and the benchmark programs),
// parsed with CLI11: how help and usage errors end a program, the checks of
// option values, and the one reading of numbers in them.
#ifndef LLMSERVE_CLI_COMMAND_LINE_H
#define LLMSERVE_CLI_COMMAND_LINE_H

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llmserve::cli {

// Parses argv into `app` and its subcommands. Returns nullopt when the
// program should go on, else its exit status: 0 after the help -h or --help
// asked for (on stdout), 2 after a usage error (on stderr: "PROGRAM: message"
// and the usage). A std::invalid_argument thrown while parsing, by a check
// below or an option's callback, is a usage error with that message. An
// option given twice takes the last value.
std::optional<int> parse(CLI::App &app, int argc, char **argv);

// "llmrun bench offline": the names of `app` and of the commands above it.
std::string command_name(const CLI::App &app);

// A whole decimal integer ("-12"; "010" is ten, "0x10" and "1e3" are not
// integers), or nullopt.
std::optional<int64_t> to_integer(const std::string &text);
// A whole number in decimal or scientific notation, or "inf"/"infinity"
// (signed), or nullopt; NaN and hexadecimal are not numbers.
std::optional<double> to_number(const std::string &text);

// Checks of an option's values as they are parsed. A wrong value is a usage
// error worded "OPTION 'VALUE': why", as the runtime's errors about options
// are (CLI11 would word a validator's message "OPTION: why"). Each returns
// `option`; a list option is checked item by item.

// An integer in [min, max]: "not an integer", "must be in [MIN, MAX]".
CLI::Option *integer_in(CLI::Option *option, int64_t min, int64_t max);
// A number, infinities included: "not a number".
CLI::Option *number(CLI::Option *option);
// A number above 0 and at most `max`: "must be positive" (or "must be in
// (0, MAX]").
CLI::Option *positive(CLI::Option *option, double max = INFINITY);
// One of `values`, which also name the option's type in the help:
// "expected cpu or cuda".
CLI::Option *one_of(CLI::Option *option, const std::vector<std::string> &values);

} // namespace llmserve::cli

#endif // LLMSERVE_CLI_COMMAND_LINE_H
