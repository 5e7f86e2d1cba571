// llmrun generate: one prompt, its continuation streamed to the terminal as
// the tokens come.
#include "cli/command_line.h"
#include "commands.h"
#include "options.h"

#include "server/choice_text.h"
#include "server/served_model.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace llmrun {
namespace {

namespace cli = llmserve::cli;

struct Options {
  llmserve::ServeOptions model;
  std::string prompt;
  bool chat = false;
  llmserve::SamplingParams params;
  std::vector<std::string> stops;
};

int generate(const Options &o) {
  llmserve::ServedModel model(o.model);
  std::vector<int32_t> tokens;
  if (o.chat) {
    if (!model.chat_template)
      throw std::invalid_argument(o.model.bundle_dir + " has no chat template (--chat)");
    nlohmann::ordered_json messages = {{{"role", "user"}, {"content", o.prompt}}};
    tokens = model.tokenizer.encode(model.chat_template->render(messages, true), false);
  } else {
    tokens = model.tokenizer.encode(o.prompt, true);
  }
  llmserve::EngineConfig config = model.engine_config(o.model);
  llmserve::Engine engine(model.executor, config);
  const llmserve::EngineStats stats = engine.stats();
  std::fprintf(stderr, "[%s; %d KV blocks of %d tokens]\n", model.loaded.description.c_str(),
               stats.num_kv_blocks, model.executor.kv_cache_spec().block_size);
  const uint64_t id = engine.add_request(tokens, o.params);
  llmserve::ChoiceText text(model.tokenizer, tokens, o.stops);
  auto print = [](const std::string &piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  };
  llmserve::RequestOutput last;
  while (!last.finished) {
    for (const llmserve::RequestOutput &out : engine.step()) {
      if (out.id != id)
        continue;
      if (out.token >= 0 && !text.stopped()) {
        print(text.push(out.token));
        if (text.stopped())
          engine.finish(id);
      }
      last = out;
    }
  }
  print(text.finish() + "\n");
  if (last.finish_reason == llmserve::FinishReason::kError)
    throw std::runtime_error("generation failed: " + last.error);
  const double seconds = std::chrono::duration<double>(last.time - last.times.arrival).count();
  std::fprintf(stderr, "[%d prompt tokens, %d generated in %.3f s, finish reason %s]\n",
               last.num_prompt_tokens, last.num_output_tokens, seconds,
               text.stopped() ? "stop" : llmserve::to_string(last.finish_reason));
  return 0;
}

} // namespace

Command add_generate_command(CLI::App &llmrun) {
  auto o = std::make_shared<Options>();
  o->model.max_num_seqs = 1;
  o->params.temperature = 0.0f;
  o->params.max_tokens = 128;
  CLI::App *command =
      llmrun.add_subcommand("generate", "generate a prompt's continuation on the terminal");
  command->add_option("--prompt", o->prompt, "the prompt (with --chat: the user's message)")
      ->type_name("TEXT")
      ->required();
  command->add_flag("--chat", o->chat, "apply the bundle's chat template");
  cli::integer_in(command->add_option("--max-tokens", o->params.max_tokens,
                                      "tokens to generate at most")
                      ->type_name("N")
                      ->capture_default_str(),
                  1, INT32_MAX);
  cli::number(command->add_option("--temperature", o->params.temperature, "0 is greedy")
                  ->type_name("T")
                  ->capture_default_str());
  cli::integer_in(command->add_option("--seed", o->params.seed, "sampling seed")->type_name("N"),
                  INT64_MIN, INT64_MAX);
  command->add_option("--stop", o->stops, "stop before this text (repeatable)")
      ->type_name("TEXT")
      ->allow_extra_args(false);
  command->add_flag("--ignore-eos", o->params.ignore_eos,
                    "keep generating past end-of-sequence tokens");
  add_engine_options(*command, o->model);
  command->footer("Prints the prompt's continuation as it is generated.");
  return {command, [o] { return generate(*o); }};
}

} // namespace llmrun
