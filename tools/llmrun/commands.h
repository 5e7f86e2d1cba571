// Subcommands of llmrun; each lives in its own <name>_command.cpp.
#ifndef LLMSERVE_TOOLS_LLMRUN_COMMANDS_H
#define LLMSERVE_TOOLS_LLMRUN_COMMANDS_H

namespace llmrun {

struct Command {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv); // argv[0] is the subcommand name
};

} // namespace llmrun

#endif
