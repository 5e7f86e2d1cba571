#include "bundle/entry_inputs.h"

#include <stdexcept>
#include <string>

namespace llmserve {

std::vector<int64_t> buffer_shape(const Manifest &m, int id, const Symbols &symbols) {
  std::vector<int64_t> shape;
  for (const Expression &dim : m.buffers[id].shape)
    shape.push_back(dim.evaluate(symbols));
  return shape;
}

void check_entry_inputs(const Manifest &m, const EntryPoint &e, const Symbols &symbols,
                        const std::vector<HostTensor> &inputs, bool kv_cache_allocated) {
  for (const Dispatch &d : e.dispatches)
    for (int id : d.bindings)
      if (m.buffers[id].kind == BufferKind::KvCache && !kv_cache_allocated)
        throw std::logic_error("entry point '" + e.name +
                               "' needs the KV cache; allocate it first");
  if (inputs.size() != e.arguments.size())
    throw std::invalid_argument("entry point '" + e.name + "' takes " +
                                std::to_string(e.arguments.size()) +
                                " arguments, got " + std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int id = e.arguments[i];
    const Buffer &b = m.buffers[id];
    const HostTensor &in = inputs[i];
    const std::vector<int64_t> shape = buffer_shape(m, id, symbols);
    if (in.dtype != b.dtype || in.shape != shape)
      throw std::invalid_argument(
          "entry point '" + e.name + "' argument " + std::to_string(i) + " '" +
          b.name + "': got " + describe(in.dtype, in.shape) + ", expected " +
          describe(b.dtype, shape) + " for [" + shape_text(b.shape) + "]");
    if (in.data.size() != b.byte_size(symbols, id))
      throw std::invalid_argument("entry point '" + e.name + "' argument " +
                                  std::to_string(i) + " '" + b.name + "': " +
                                  std::to_string(in.data.size()) +
                                  " bytes of data for " + describe(in.dtype, in.shape));
  }
}

std::vector<HostTensor> step_argument_tensors(const Manifest &m, const EntryPoint &e,
                                              const StepBatch &batch) {
  const Symbols symbols = step_symbols(batch, 0);
  std::vector<HostTensor> tensors(abi::kNumStepArguments);
  for_each_step_array(batch, [&](int i, const char *, abi::Extent, const auto &array, auto) {
    HostTensor &t = tensors[static_cast<size_t>(i)];
    const int id = e.arguments.at(static_cast<size_t>(i));
    t.dtype = m.buffers[id].dtype;
    t.shape = buffer_shape(m, id, symbols);
    const auto *bytes = reinterpret_cast<const uint8_t *>(array.data());
    t.data.assign(bytes, bytes + array.size() * sizeof(array[0]));
  });
  return tensors;
}

} // namespace llmserve
