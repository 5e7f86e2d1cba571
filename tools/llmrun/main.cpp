// llmrun: the serving runtime's command-line front end.
#include "cli/command_line.h"
#include "commands.h"

#include "llmserve/abi.h"

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace {

llmrun::Command add_version_command(CLI::App &llmrun) {
  return {llmrun.add_subcommand("version", "print the bundle format and kernel ABI versions"),
          [] {
            std::printf("llmserve bundle format %d, kernel ABI %d\n",
                        llmserve::abi::kBundleFormatVersion, llmserve::abi::kKernelAbiVersion);
            return 0;
          }};
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"The serving runtime's command-line front end.", "llmrun"};
  app.require_subcommand(1);
  // The subcommands in the order the help lists them.
  std::vector<llmrun::Command> commands = {add_version_command(app),
                                           llmrun::add_tokenize_command(app),
                                           llmrun::add_call_command(app)};
  CLI::App &bench = *app.add_subcommand(
      "bench", "serving (HTTP) and offline throughput benchmarks with a baseline");
  bench.require_subcommand(1);
  const std::vector<std::string> command_line(argv, argv + argc);
  commands.push_back(llmrun::add_bench_serve_command(bench, command_line));
  commands.push_back(llmrun::add_bench_offline_command(bench, command_line));
  commands.push_back(llmrun::add_bench_decode_command(bench));
  commands.push_back(llmrun::add_bench_ppl_command(bench));
  commands.push_back(llmrun::add_serve_command(app));
  commands.push_back(llmrun::add_generate_command(app));

  if (std::optional<int> status = llmserve::cli::parse(app, argc, argv))
    return *status;
  for (const llmrun::Command &c : commands) {
    if (!c.app->parsed())
      continue;
    try {
      return c.run();
    } catch (const std::exception &e) {
      std::fprintf(stderr, "%s: error: %s\n", llmserve::cli::command_name(*c.app).c_str(),
                   e.what());
      return 1;
    }
  }
  return 2; // not reached: parsing requires a command
}
