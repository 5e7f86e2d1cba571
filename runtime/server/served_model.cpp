#include "server/served_model.h"

#include "bundle/bundle.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <tuple>

namespace llmserve {
namespace {

// The CUDA executor sizes its step memory from the engine's limits, which
// the model config bounds; the KV cache is sized after it, from the memory
// it leaves (ServedModel::engine_config).
ModelExecutor load(const ServeOptions &options) {
  const Manifest manifest = Bundle::load_manifest(options.bundle_dir);
  if (!manifest.model || !manifest.kv_cache)
    throw std::runtime_error(options.bundle_dir +
                             ": manifest.json has no model or kv_cache section; "
                             "it is not a model bundle");
  return load_model_executor(options, manifest, make_engine_limits(options, *manifest.model));
}

std::string model_name(const ServeOptions &options) {
  if (!options.served_model_name.empty())
    return options.served_model_name;
  std::filesystem::path dir(options.bundle_dir);
  if (!dir.has_filename()) // "m.llmb/"
    dir = dir.parent_path();
  return dir.stem().string();
}

int64_t count_parameters(const Manifest &manifest) {
  // A tensor may feed several buffers (tied embeddings, row slices): count
  // each row range of each tensor once.
  std::set<std::tuple<std::string, int64_t, int64_t>> seen;
  int64_t total = 0;
  for (size_t id = 0; id < manifest.buffers.size(); ++id) {
    const Buffer &b = manifest.buffers[id];
    if (b.kind != BufferKind::Weight ||
        !seen.emplace(b.tensor, b.rows_begin, b.rows_end).second)
      continue;
    total += int64_t(b.byte_size(Symbols{}, int(id)) / dtype_size(b.dtype));
  }
  return total;
}

std::optional<ChatTemplate> load_chat_template(const Tokenizer &tokenizer) {
  if (tokenizer.chat_template().empty())
    return std::nullopt;
  return ChatTemplate::from_tokenizer(tokenizer);
}

} // namespace

ServedModel::ServedModel(const ServeOptions &options)
    : name(model_name(options)),
      loaded(load(options)), executor(*loaded.executor),
      config(*loaded.manifest.model),
      num_parameters(count_parameters(loaded.manifest)),
      tokenizer(Tokenizer::from_file(options.bundle_dir)),
      chat_template(load_chat_template(tokenizer)) {}

EngineConfig ServedModel::engine_config(const ServeOptions &options) const {
  EngineConfig c = make_engine_config(options, config, executor.kv_cache_spec().bytes_per_token,
                                      loaded.kv_memory);
  for (int32_t id : tokenizer.eos_token_ids())
    if (std::find(c.eos_token_ids.begin(), c.eos_token_ids.end(), id) == c.eos_token_ids.end())
      c.eos_token_ids.push_back(id);
  return c;
}

std::shared_ptr<const grammar::Vocabulary>
ServedModel::grammar_vocabulary(const EngineConfig &config) const {
  std::vector<std::string> bytes(static_cast<size_t>(this->config.vocab_size));
  const size_t known = std::min(bytes.size(), tokenizer.vocab_size());
  for (size_t id = 0; id < known; ++id)
    bytes[id] = tokenizer.token_bytes(static_cast<int32_t>(id));
  return std::make_shared<const grammar::Vocabulary>(std::move(bytes), config.eos_token_ids);
}

} // namespace llmserve
