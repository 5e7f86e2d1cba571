// Subcommands of llmrun; each lives in its own <name>_command.cpp and adds
// itself to the llmrun app (or to `llmrun bench`).
#ifndef LLMSERVE_TOOLS_LLMRUN_COMMANDS_H
#define LLMSERVE_TOOLS_LLMRUN_COMMANDS_H

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace llmrun {

// A subcommand: its options are bound to state that `run` runs with once the
// command line has parsed, so an error while it runs (exit status 1) is never
// taken for a usage error (2).
struct Command {
  CLI::App *app;
  std::function<int()> run;
};

Command add_tokenize_command(CLI::App &llmrun);
Command add_call_command(CLI::App &llmrun);
// `command_line` goes into the result file.
Command add_bench_serve_command(CLI::App &bench, const std::vector<std::string> &command_line);
Command add_bench_offline_command(CLI::App &bench, const std::vector<std::string> &command_line);
Command add_bench_decode_command(CLI::App &bench);
Command add_bench_ppl_command(CLI::App &bench);
Command add_serve_command(CLI::App &llmrun);
Command add_generate_command(CLI::App &llmrun);

} // namespace llmrun

#endif
