// llmrun: the serving runtime's command-line front end.
#include "commands.h"

#include "llmserve/abi.h"

#include <cstdio>
#include <cstring>
#include <exception>

namespace llmrun {
// One declaration and one table row per subcommand.
int tokenize_command(int argc, char **argv);
int call_command(int argc, char **argv);
int bench_command(int argc, char **argv);
int serve_command(int argc, char **argv);
int generate_command(int argc, char **argv);
} // namespace llmrun

namespace {

int version_command(int, char **) {
  std::printf("llmserve bundle format %d, kernel ABI %d\n",
              llmserve::abi::kBundleFormatVersion,
              llmserve::abi::kKernelAbiVersion);
  return 0;
}

const llmrun::Command kCommands[] = {
    {"version", "print the bundle format and kernel ABI versions", version_command},
    {"tokenize", "encode JSON strings to ids (or decode) with a tokenizer", llmrun::tokenize_command},
    {"call", "run one entry point of a bundle on .npy inputs", llmrun::call_command},
    {"bench", "serving (HTTP) and offline throughput benchmarks with a baseline", llmrun::bench_command},
    {"serve", "serve a bundle over the OpenAI API (HTTP)", llmrun::serve_command},
    {"generate", "generate a prompt's continuation on the terminal", llmrun::generate_command},
};

int usage(FILE *out) {
  std::fprintf(out, "usage: llmrun <command> [options]\n\ncommands:\n");
  for (const auto &c : kCommands)
    std::fprintf(out, "  %-12s %s\n", c.name, c.summary);
  return out == stderr ? 2 : 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2)
    return usage(stderr);
  if (!std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help"))
    return usage(stdout);
  for (const auto &c : kCommands) {
    if (!std::strcmp(argv[1], c.name)) {
      try {
        return c.run(argc - 1, argv + 1);
      } catch (const std::exception &e) {
        std::fprintf(stderr, "llmrun %s: error: %s\n", c.name, e.what());
        return 1;
      }
    }
  }
  std::fprintf(stderr, "llmrun: unknown command '%s'\n", argv[1]);
  return usage(stderr);
}
