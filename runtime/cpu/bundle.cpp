#include "cpu/bundle.h"

#include "model/convert.h"

#include <dlfcn.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>

namespace llmserve {

namespace {

namespace fs = std::filesystem;

std::string dims_text(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string resolve(const std::string &dir, const std::string &path) {
  return fs::path(path).is_absolute() ? path : (fs::path(dir) / path).string();
}

} // namespace

void Bundle::CloseLibrary::operator()(void *handle) const { dlclose(handle); }

Bundle::Bundle(const std::string &dir, const std::string &checkpoint_dir)
    : dir_(dir) {
  const fs::path manifest_path = fs::path(dir) / abi::kManifestFile;
  if (!fs::is_directory(dir))
    throw std::runtime_error(dir + ": not a directory");
  if (!fs::exists(manifest_path))
    throw std::runtime_error(dir + ": not a kernel bundle (no " +
                             abi::kManifestFile + ")");
  manifest_ = Manifest::load(manifest_path.string());
  load_kernels();
  bind_weights(checkpoint_dir);
}

void Bundle::load_kernels() {
  const fs::path path = fs::absolute(fs::path(dir_) / abi::kCpuKernelsFile);
  if (!fs::exists(path))
    throw std::runtime_error(dir_ + ": the bundle has no CPU kernels (no " +
                             abi::kCpuKernelsFile + ")");
  // RTLD_LOCAL: two bundles loaded at once must not resolve each other's
  // symbols. RTLD_NOW: an unresolved import fails here, not mid-step.
  library_.reset(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!library_)
    throw std::runtime_error(path.string() + ": cannot load: " + dlerror());
  for (const Kernel &k : manifest_.kernels) {
    void *fn = dlsym(library_.get(), k.symbol.c_str());
    if (!fn)
      throw std::runtime_error(path.string() + ": no symbol '" + k.symbol +
                               "' for kernel '" + k.name + "'");
    kernels_.push_back(reinterpret_cast<abi::CpuKernelFn>(fn));
  }
}

void Bundle::bind_weights(const std::string &checkpoint_dir) {
  weights_.assign(manifest_.buffers.size(), nullptr);
  bool any = false;
  for (const Buffer &b : manifest_.buffers)
    any |= b.kind == BufferKind::Weight;
  if (!any)
    return;

  if (!checkpoint_dir.empty()) {
    checkpoint_ = Checkpoint::open(checkpoint_dir);
    weights_source_ = checkpoint_dir;
  } else if (!manifest_.weights.embedded.empty()) {
    weights_source_ = resolve(dir_, manifest_.weights.embedded);
    embedded_ = SafetensorsFile::open(weights_source_);
  } else if (!manifest_.weights.checkpoint.empty()) {
    weights_source_ = resolve(dir_, manifest_.weights.checkpoint);
    checkpoint_ = Checkpoint::open(weights_source_);
  } else {
    throw std::runtime_error(dir_ + ": the bundle reads weights but neither "
                                    "embeds them nor names a checkpoint; give "
                                    "a checkpoint directory");
  }

  for (size_t id = 0; id < manifest_.buffers.size(); ++id) {
    const Buffer &b = manifest_.buffers[id];
    if (b.kind != BufferKind::Weight)
      continue;
    const std::string where = dir_ + ": buffers[" + std::to_string(id) +
                              "] (weight '" + b.name + "'): ";
    const TensorView *t = nullptr;
    if (checkpoint_) {
      t = checkpoint_->find(b.tensor);
      if (!t) {
        try {
          checkpoint_->tensor(b.tensor); // throws, naming why
        } catch (const std::exception &e) {
          throw std::runtime_error(where + e.what());
        }
      }
    } else {
      t = embedded_->find(b.tensor);
      if (!t && embedded_->unreadable_dtype(b.tensor))
        throw std::runtime_error(where + "tensor '" + b.tensor + "' in " +
                                 weights_source_ + " has dtype " +
                                 embedded_->unreadable_dtype(b.tensor) +
                                 ", which llmserve does not read");
      if (!t)
        throw std::runtime_error(where + "tensor '" + b.tensor +
                                 "' is missing from " + weights_source_);
    }

    std::vector<int64_t> want;
    for (const Expression &dim : b.shape)
      want.push_back(dim.evaluate(Symbols{}));
    std::vector<int64_t> stored = want; // the shape the checkpoint should hold
    if (b.transpose)
      std::swap(stored[0], stored[1]);
    if (t->shape != stored)
      throw std::runtime_error(
          where + "tensor '" + b.tensor + "' in " + weights_source_ +
          " has shape " + dims_text(t->shape) + ", expected " + dims_text(stored) +
          (b.transpose ? " (transposed to " + dims_text(want) + ")" : ""));

    const size_t bytes = static_cast<size_t>(t->numel()) * dtype_size(b.dtype);
    const bool aligned =
        reinterpret_cast<uintptr_t>(t->data) % dtype_size(b.dtype) == 0;
    if (t->dtype == b.dtype && !b.transpose && aligned) {
      weights_[id] = const_cast<uint8_t *>(t->data); // mapped read-only
      mapped_weight_bytes_ += bytes;
      continue;
    }
    AlignedBuffer &dst = converted_.emplace_back(bytes);
    try {
      convert_tensor(*t, b.dtype, b.transpose, dst.data());
    } catch (const std::exception &e) {
      throw std::runtime_error(where + e.what());
    }
    weights_[id] = dst.data();
    converted_weight_bytes_ += bytes;
    // The converted copy is what kernels read; drop the file's pages.
    if (checkpoint_)
      checkpoint_->release(*t);
    else
      embedded_->release(*t);
  }
}

} // namespace llmserve
