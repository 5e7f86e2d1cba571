// llmrun generate: one prompt, its continuation streamed to the terminal as
// the tokens come.
#include "commands.h"

#include "server/choice_text.h"
#include "server/served_model.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace llmrun {
namespace {

const char kUsage[] =
    "usage: llmrun generate <bundle> --prompt TEXT [options]\n"
    "  Prints the prompt's continuation as it is generated.\n"
    "  --prompt TEXT        the prompt (with --chat: the user's message)\n"
    "  --chat               apply the bundle's chat template\n"
    "  --max-tokens N       tokens to generate at most (default 128)\n"
    "  --temperature T      0 is greedy (default 0)\n"
    "  --seed N             sampling seed\n"
    "  --stop TEXT          stop before this text (repeatable)\n"
    "  --ignore-eos         keep generating past end-of-sequence tokens\n"
    "  --weights DIR, --threads N, --max-model-len N, --kv-cache-memory SIZE,\n"
    "  --max-num-seqs N, --max-num-batched-tokens N, --no-prefix-caching,\n"
    "  --device cpu|cuda, --no-cuda-graphs\n"
    "                       as for llmrun serve\n";

double parse_number(const char *option, const std::string &text) {
  size_t end = 0;
  double value = 0;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception &) {
    end = 0;
  }
  if (end == 0 || end != text.size())
    throw std::invalid_argument(std::string(option) + " '" + text + "': not a number");
  return value;
}

} // namespace

int generate_command(int argc, char **argv) {
  llmserve::ServeOptions options;
  options.max_num_seqs = 1;
  std::string prompt;
  bool has_prompt = false, chat = false;
  llmserve::SamplingParams params;
  params.temperature = 0.0f;
  params.max_tokens = 128;
  std::vector<std::string> stops;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool has_value = i + 1 < argc;
    if (llmserve::parse_engine_option(options, i, argc, argv))
      continue;
    if (flag == "-h" || flag == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (flag == "--prompt" && has_value) {
      prompt = argv[++i];
      has_prompt = true;
    } else if (flag == "--chat") {
      chat = true;
    } else if (flag == "--max-tokens" && has_value) {
      params.max_tokens = static_cast<int32_t>(llmserve::parse_integer("--max-tokens", argv[++i], 1, INT32_MAX));
    } else if (flag == "--temperature" && has_value) {
      params.temperature = static_cast<float>(parse_number("--temperature", argv[++i]));
    } else if (flag == "--seed" && has_value) {
      params.seed = llmserve::parse_integer("--seed", argv[++i], INT64_MIN, INT64_MAX);
    } else if (flag == "--stop" && has_value) {
      stops.push_back(argv[++i]);
    } else if (flag == "--ignore-eos") {
      params.ignore_eos = true;
    } else if (flag[0] != '-' && options.bundle_dir.empty()) {
      options.bundle_dir = flag;
    } else {
      std::fprintf(stderr, "llmrun generate: unknown argument '%s'\n%s", argv[i], kUsage);
      return 2;
    }
  }
  if (options.bundle_dir.empty() || !has_prompt) {
    std::fprintf(stderr, "llmrun generate: <bundle> and --prompt are required\n%s", kUsage);
    return 2;
  }

  llmserve::ServedModel model(options);
  std::vector<int32_t> tokens;
  if (chat) {
    if (!model.chat_template)
      throw std::invalid_argument(options.bundle_dir + " has no chat template (--chat)");
    nlohmann::ordered_json messages = {{{"role", "user"}, {"content", prompt}}};
    tokens = model.tokenizer.encode(model.chat_template->render(messages, true), false);
  } else {
    tokens = model.tokenizer.encode(prompt, true);
  }
  llmserve::EngineConfig config = model.engine_config(options);
  llmserve::Engine engine(model.executor, config);
  const llmserve::EngineStats stats = engine.stats();
  std::fprintf(stderr, "[%s; %d KV blocks of %d tokens]\n", model.loaded.description.c_str(),
               stats.num_kv_blocks, model.executor.kv_cache_spec().block_size);
  const uint64_t id = engine.add_request(tokens, params);
  llmserve::ChoiceText text(model.tokenizer, tokens, stops);
  auto print = [](const std::string &piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  };
  llmserve::RequestOutput last;
  while (!last.finished) {
    for (const llmserve::RequestOutput &o : engine.step()) {
      if (o.id != id)
        continue;
      if (o.token >= 0 && !text.stopped()) {
        print(text.push(o.token));
        if (text.stopped())
          engine.finish(id);
      }
      last = o;
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

} // namespace llmrun
