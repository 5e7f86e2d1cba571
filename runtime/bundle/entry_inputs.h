// Checks of an entry point's inputs that both executors' run_entry share,
// and a step's arrays as such inputs.
#ifndef LLMSERVE_BUNDLE_ENTRY_INPUTS_H
#define LLMSERVE_BUNDLE_ENTRY_INPUTS_H

#include "bundle/host_tensor.h"
#include "bundle/manifest.h"
#include "bundle/step_batch.h"

#include <cstdint>
#include <vector>

namespace llmserve {

// The shape of buffer `id` for `symbols`.
std::vector<int64_t> buffer_shape(const Manifest &m, int id, const Symbols &symbols);

// Throws std::invalid_argument unless `inputs` are one per argument of `e`,
// each of the dtype and shape the manifest gives for `symbols` and with as
// many bytes: "entry point 'add' argument 0 'a': got f32 [3], expected f32
// [4] for [T]". Throws std::logic_error if `e` binds a KV cache buffer and
// `kv_cache_allocated` is false.
void check_entry_inputs(const Manifest &m, const EntryPoint &e, const Symbols &symbols,
                        const std::vector<HostTensor> &inputs, bool kv_cache_allocated);

// The step arguments of `batch` as the inputs of `m`'s entry point `e`
// (`step` or `logits`): each array's bytes, with the dtype and shape the
// manifest gives that argument.
std::vector<HostTensor> step_argument_tensors(const Manifest &m, const EntryPoint &e,
                                              const StepBatch &batch);

} // namespace llmserve

#endif // LLMSERVE_BUNDLE_ENTRY_INPUTS_H
