#include "model/checkpoint.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

namespace llmserve {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char *kSingleFile = "model.safetensors";
constexpr const char *kIndexFile = "model.safetensors.index.json";

[[noreturn]] void fail(const std::string &where, const std::string &what) {
  throw std::runtime_error(where + ": " + what);
}

// The shard file of each tensor, from the index's "weight_map".
std::map<std::string, std::string> read_weight_map(const std::string &index_path) {
  std::ifstream in(index_path);
  json index = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (index.is_discarded() || !index.is_object())
    fail(index_path, "not a valid JSON object");
  auto weight_map = index.find("weight_map");
  if (weight_map == index.end() || !weight_map->is_object())
    fail(index_path, "missing object field 'weight_map'");
  std::map<std::string, std::string> shards;
  for (auto it = weight_map->begin(); it != weight_map->end(); ++it) {
    const json &shard = it.value();
    // Shards are plain file names next to the index; anything else could
    // reach outside the checkpoint.
    if (!shard.is_string() || shard.get<std::string>().empty() ||
        shard.get<std::string>().find('/') != std::string::npos ||
        shard.get<std::string>() == "." || shard.get<std::string>() == "..")
      fail(index_path, "tensor '" + it.key() + "': shard " + shard.dump() +
                           " is not a file name in the checkpoint directory");
    shards.emplace(it.key(), shard.get<std::string>());
  }
  return shards;
}

} // namespace

Checkpoint Checkpoint::open(const std::string &dir) {
  Checkpoint ckpt;
  ckpt.dir_ = dir;
  if (!fs::is_directory(dir))
    fail(dir, "not a directory");

  const fs::path single = fs::path(dir) / kSingleFile;
  const fs::path index_path = fs::path(dir) / kIndexFile;
  std::map<std::string, std::string> weight_map;
  if (fs::exists(single)) {
    ckpt.files_.push_back(SafetensorsFile::open(single.string()));
  } else if (fs::exists(index_path)) {
    weight_map = read_weight_map(index_path.string());
    std::set<std::string> shard_names;
    for (const auto &entry : weight_map)
      shard_names.insert(entry.second);
    for (const std::string &shard : shard_names)
      ckpt.files_.push_back(SafetensorsFile::open((fs::path(dir) / shard).string()));
  } else {
    const bool pickled = fs::exists(fs::path(dir) / "pytorch_model.bin") ||
                         fs::exists(fs::path(dir) / "pytorch_model.bin.index.json");
    fail(dir, std::string("no ") + kSingleFile + " or " + kIndexFile +
                  (pickled ? " (PyTorch .bin weights are not read: convert "
                             "them to safetensors)"
                           : ""));
  }

  for (const SafetensorsFile &file : ckpt.files_)
    for (const TensorView &t : file.tensors())
      if (!ckpt.by_name_.emplace(t.name, &t).second)
        fail(dir, "tensor '" + t.name + "' is in both " +
                      ckpt.file_of(*ckpt.by_name_.at(t.name)).path() + " and " +
                      file.path());

  for (const auto &[name, shard] : weight_map) {
    const std::string shard_path = (fs::path(dir) / shard).string();
    for (const SafetensorsFile &file : ckpt.files_)
      if (file.path() == shard_path && !file.find(name) &&
          !file.unreadable_dtype(name))
        fail(index_path.string(), "tensor '" + name + "' is listed in shard '" +
                                      shard + "', which does not contain it");
  }
  return ckpt;
}

const TensorView *Checkpoint::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

const TensorView &Checkpoint::tensor(std::string_view name) const {
  if (const TensorView *t = find(name))
    return *t;
  for (const SafetensorsFile &file : files_)
    if (const char *dtype = file.unreadable_dtype(name))
      fail(file.path(), "tensor '" + std::string(name) + "' has dtype " +
                            dtype + ", which llmserve does not read");
  fail(dir_, "tensor '" + std::string(name) + "' is missing");
}

std::vector<const TensorView *> Checkpoint::tensors() const {
  std::vector<const TensorView *> all;
  all.reserve(by_name_.size());
  for (const auto &entry : by_name_)
    all.push_back(entry.second);
  return all;
}

const SafetensorsFile &Checkpoint::file_of(const TensorView &tensor) const {
  for (const SafetensorsFile &file : files_)
    if (const TensorView *t = file.find(tensor.name); t == &tensor)
      return file;
  fail(dir_, "tensor '" + tensor.name + "' does not belong to this checkpoint");
}

void Checkpoint::release(const TensorView &tensor) const {
  file_of(tensor).release(tensor);
}

} // namespace llmserve
