#include "model/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace llmserve {

namespace {

using nlohmann::json;

// The reference implementation refuses larger headers; so do we, so a corrupt
// length cannot make us parse gigabytes of tensor data as JSON.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// Every dtype the safetensors format defines, with its element size. Tensors
// of the ones DType lacks are still checked for layout, then left out.
struct SafetensorsDType {
  const char *name;
  size_t size;
};
constexpr SafetensorsDType kSafetensorsDTypes[] = {
    {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1},
    {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
    {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8},
};

const SafetensorsDType *find_safetensors_dtype(const std::string &name) {
  for (const SafetensorsDType &d : kSafetensorsDTypes)
    if (name == d.name)
      return &d;
  return nullptr;
}

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw std::runtime_error(path + ": " + what);
}

[[noreturn]] void fail_tensor(const std::string &path, const std::string &name,
                              const std::string &what) {
  fail(path, "tensor '" + name + "': " + what);
}

// A JSON value as a non-negative integer, or false.
bool as_count(const json &value, uint64_t &out) {
  if (value.is_number_unsigned()) {
    out = value.get<uint64_t>();
    return true;
  }
  if (value.is_number_integer() && value.get<int64_t>() >= 0) {
    out = static_cast<uint64_t>(value.get<int64_t>());
    return true;
  }
  return false;
}

// One header entry, before we know whether llmserve reads its dtype.
struct Entry {
  std::string name;
  const SafetensorsDType *dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end; // offsets into the data section
};

Entry parse_entry(const std::string &path, const std::string &name,
                  const json &info, uint64_t data_size) {
  if (!info.is_object())
    fail_tensor(path, name, "header entry is not a JSON object");
  Entry e{name, nullptr, {}, 0, 0};

  auto dtype = info.find("dtype");
  if (dtype == info.end() || !dtype->is_string())
    fail_tensor(path, name, "missing string field 'dtype'");
  e.dtype = find_safetensors_dtype(dtype->get<std::string>());
  if (!e.dtype)
    fail_tensor(path, name,
                "unknown dtype '" + dtype->get<std::string>() + "'");

  auto shape = info.find("shape");
  if (shape == info.end() || !shape->is_array())
    fail_tensor(path, name, "missing array field 'shape'");
  uint64_t numel = 1;
  for (const json &dim : *shape) {
    uint64_t d;
    if (!as_count(dim, d) || d > static_cast<uint64_t>(INT64_MAX))
      fail_tensor(path, name,
                  "shape entry " + dim.dump() + " is not a non-negative integer");
    if (__builtin_mul_overflow(numel, d, &numel))
      fail_tensor(path, name, "shape " + shape->dump() + " overflows");
    e.shape.push_back(static_cast<int64_t>(d));
  }
  uint64_t nbytes;
  if (__builtin_mul_overflow(numel, e.dtype->size, &nbytes))
    fail_tensor(path, name, "shape " + shape->dump() + " overflows");

  auto offsets = info.find("data_offsets");
  if (offsets == info.end() || !offsets->is_array() || offsets->size() != 2 ||
      !as_count((*offsets)[0], e.begin) || !as_count((*offsets)[1], e.end))
    fail_tensor(path, name,
                "'data_offsets' must be two non-negative integers [begin, end]");
  if (e.begin > e.end)
    fail_tensor(path, name, "data_offsets " + offsets->dump() + " end before they begin");
  if (e.end > data_size)
    fail_tensor(path, name,
                "data_offsets " + offsets->dump() + " run past the data section (" +
                    std::to_string(data_size) + " bytes; file truncated?)");
  if (e.end - e.begin != nbytes)
    fail_tensor(path, name,
                "data_offsets " + offsets->dump() + " span " +
                    std::to_string(e.end - e.begin) + " bytes but shape " +
                    shape->dump() + " of " + e.dtype->name + " needs " +
                    std::to_string(nbytes));
  return e;
}

void check_metadata(const std::string &path, const json &metadata) {
  if (!metadata.is_object())
    fail(path, "'__metadata__' is not a JSON object");
  for (auto it = metadata.begin(); it != metadata.end(); ++it)
    if (!it.value().is_string())
      fail(path, "'__metadata__' value of '" + it.key() + "' is not a string");
}

// The tensors must tile the data section exactly: no overlap, no gap, nothing
// after the last one. That is what makes a tensor's bytes its own.
void check_layout(const std::string &path, std::vector<Entry> &entries,
                  uint64_t data_size) {
  std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  const Entry *previous = nullptr;
  for (const Entry &e : entries) {
    if (e.begin < covered)
      fail_tensor(path, e.name,
                  "bytes [" + std::to_string(e.begin) + ", " +
                      std::to_string(e.end) + ") overlap tensor '" +
                      previous->name + "'");
    if (e.begin > covered)
      fail_tensor(path, e.name,
                  "starts at byte " + std::to_string(e.begin) +
                      " but the previous tensor ends at " +
                      std::to_string(covered) + " (gap in the data section)");
    covered = e.end;
    if (e.end > e.begin)
      previous = &e;
  }
  if (covered != data_size)
    fail(path, std::to_string(data_size - covered) +
                   " trailing bytes after the last tensor");
}

} // namespace

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

SafetensorsFile SafetensorsFile::open(const std::string &path) {
  SafetensorsFile file;
  file.path_ = path;

  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, "not a regular file");
  }
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (file_size < 8) {
    ::close(fd);
    fail(path, "file is " + std::to_string(file_size) +
                   " bytes, too short for the 8-byte header length");
  }
  void *map = mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
  int map_errno = errno;
  ::close(fd);
  if (map == MAP_FAILED)
    fail(path, std::string("cannot map: ") + std::strerror(map_errno));
  file.map_ = static_cast<uint8_t *>(map);
  file.map_size_ = file_size;

  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i)
    header_size = (header_size << 8) | file.map_[i];
  if (header_size > kMaxHeaderBytes)
    fail(path, "header length " + std::to_string(header_size) +
                   " exceeds the limit of " + std::to_string(kMaxHeaderBytes));
  if (header_size > file_size - 8)
    fail(path, "header length " + std::to_string(header_size) +
                   " runs past the end of the file (" +
                   std::to_string(file_size) + " bytes; truncated?)");
  const char *header_begin = reinterpret_cast<const char *>(file.map_ + 8);
  if (header_size == 0 || header_begin[0] != '{')
    fail(path, "header does not start with '{'");

  json header = json::parse(header_begin, header_begin + header_size, nullptr,
                            /*allow_exceptions=*/false);
  // Starting with '{', a header that parses is an object.
  if (header.is_discarded())
    fail(path, "header is not valid JSON");

  const uint64_t data_size = file_size - 8 - header_size;
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__")
      check_metadata(path, it.value());
    else
      entries.push_back(parse_entry(path, it.key(), it.value(), data_size));
  }
  check_layout(path, entries, data_size);

  const uint8_t *data = file.map_ + 8 + header_size;
  for (Entry &e : entries) {
    if (auto dtype = parse_dtype(e.dtype->name))
      file.tensors_.push_back(TensorView{std::move(e.name), *dtype,
                                         std::move(e.shape), data + e.begin,
                                         static_cast<size_t>(e.end - e.begin)});
    else
      file.unreadable_.emplace_back(std::move(e.name), e.dtype->name);
  }
  std::sort(file.tensors_.begin(), file.tensors_.end(),
            [](const TensorView &a, const TensorView &b) { return a.name < b.name; });
  std::sort(file.unreadable_.begin(), file.unreadable_.end());
  return file;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile &&other) noexcept
    : path_(std::move(other.path_)), map_(std::exchange(other.map_, nullptr)),
      map_size_(std::exchange(other.map_size_, 0)),
      tensors_(std::move(other.tensors_)),
      unreadable_(std::move(other.unreadable_)) {}

SafetensorsFile &SafetensorsFile::operator=(SafetensorsFile &&other) noexcept {
  if (this != &other) {
    if (map_)
      munmap(map_, map_size_);
    path_ = std::move(other.path_);
    map_ = std::exchange(other.map_, nullptr);
    map_size_ = std::exchange(other.map_size_, 0);
    tensors_ = std::move(other.tensors_);
    unreadable_ = std::move(other.unreadable_);
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_)
    munmap(map_, map_size_);
}

const TensorView *SafetensorsFile::find(std::string_view name) const {
  auto it = std::lower_bound(
      tensors_.begin(), tensors_.end(), name,
      [](const TensorView &t, std::string_view n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

const char *SafetensorsFile::unreadable_dtype(std::string_view name) const {
  auto it = std::lower_bound(
      unreadable_.begin(), unreadable_.end(), name,
      [](const auto &entry, std::string_view n) { return entry.first < n; });
  return it != unreadable_.end() && it->first == name ? it->second : nullptr;
}

void SafetensorsFile::release(const TensorView &tensor) const {
  uintptr_t begin = reinterpret_cast<uintptr_t>(tensor.data);
  uintptr_t end = begin + tensor.nbytes;
  // Dropping pages of memory that is not ours would zero it.
  if (begin < reinterpret_cast<uintptr_t>(map_) ||
      end > reinterpret_cast<uintptr_t>(map_) + map_size_)
    fail_tensor(path_, tensor.name, "is not a tensor of this file");
  // Only whole pages inside the tensor: its neighbours may still be in use.
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  begin = (begin + page - 1) / page * page;
  end = end / page * page;
  if (end > begin)
    madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
}

} // namespace llmserve
