// The options of the llmrun commands that load a bundle, declared once into
// the ServeOptions the model is loaded (server/model_executor.h) and served
// with. Each function adds its options and those of the one before it.
#ifndef LLMSERVE_TOOLS_LLMRUN_OPTIONS_H
#define LLMSERVE_TOOLS_LLMRUN_OPTIONS_H

#include "server/serve_options.h"

#include <CLI/CLI.hpp>

namespace llmrun {

// The bundle (positional) and where the model's weights come from and where
// it runs: --weights, --threads, --device. llmrun call.
void add_model_options(CLI::App &app, llmserve::ServeOptions &options);
// And how the engine steps: --no-cuda-graphs, --no-overlap, --decode-only-steps,
// --max-num-seqs, --max-num-batched-tokens, --max-model-len. llmrun bench
// offline.
void add_step_options(CLI::App &app, llmserve::ServeOptions &options);
// And its KV cache: --kv-cache-memory, --no-prefix-caching. llmrun generate
// and bench decode.
void add_engine_options(CLI::App &app, llmserve::ServeOptions &options);
// And the server's: --host, --port, --api-key, --served-model-name,
// --max-queued-requests. llmrun serve.
void add_serve_options(CLI::App &app, llmserve::ServeOptions &options);

} // namespace llmrun

#endif // LLMSERVE_TOOLS_LLMRUN_OPTIONS_H
