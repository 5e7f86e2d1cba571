#include "bundle/npy.h"

#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace llmserve {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

constexpr std::pair<DType, const char *> kDescrs[] = {
    {DType::F32, "<f4"}, {DType::F16, "<f2"}, {DType::I32, "<i4"},
    {DType::I64, "<i8"}, {DType::I8, "|i1"}};

// The header is a Python dict literal, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
public:
  HeaderParser(const std::string &path, const std::string &text)
      : path_(path), text_(text) {}

  HostTensor parse() {
    HostTensor t;
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (!accept('}')) {
      const std::string key = quoted();
      expect(':');
      if (key == "descr") {
        const std::string descr = quoted();
        have_descr = false;
        for (const auto &[dtype, name] : kDescrs)
          if (descr == name) {
            t.dtype = dtype;
            have_descr = true;
          }
        if (!have_descr)
          fail("dtype '" + descr + "' is not supported (expected <f4, <f2, <i4 or <i8)");
      } else if (key == "fortran_order") {
        if (word() != "False")
          fail("Fortran-order arrays are not supported; save a C-order array");
        have_order = true;
      } else if (key == "shape") {
        t.shape = shape();
        have_shape = true;
      } else {
        fail("unexpected key '" + key + "'");
      }
      if (!accept(',')) {
        expect('}');
        break;
      }
    }
    if (!have_descr || !have_order || !have_shape)
      fail("header lacks 'descr', 'fortran_order' or 'shape'");
    return t;
  }

private:
  std::vector<int64_t> shape() {
    std::vector<int64_t> dims;
    expect('(');
    while (!accept(')')) {
      skip_space();
      int64_t n = 0;
      const size_t start = pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        if (__builtin_mul_overflow(n, 10, &n) ||
            __builtin_add_overflow(n, text_[pos_] - '0', &n))
          fail("dimension too large");
        ++pos_;
      }
      if (pos_ == start)
        fail("bad shape");
      dims.push_back(n);
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return dims;
  }

  std::string quoted() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      fail("expected a quoted string");
    const char quote = text_[pos_++];
    const size_t end = text_.find(quote, pos_);
    if (end == std::string::npos)
      fail("unterminated string");
    std::string s = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return s;
  }

  std::string word() {
    skip_space();
    const size_t start = pos_;
    while (pos_ < text_.size() && std::isalpha(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
    return text_.substr(start, pos_ - start);
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }

  bool accept(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void expect(char c) {
    if (!accept(c))
      fail(std::string("expected '") + c + "' at header position " + std::to_string(pos_));
  }

  [[noreturn]] void fail(const std::string &what) const {
    throw std::runtime_error(path_ + ": bad .npy header: " + what);
  }

  const std::string &path_;
  const std::string &text_;
  size_t pos_ = 0;
};

} // namespace

HostTensor read_npy(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error(path + ": cannot open");
  const std::string bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  if (in.bad())
    throw std::runtime_error(path + ": read error");
  if (bytes.size() < kMagicSize + 4 || bytes.compare(0, kMagicSize, kMagic) != 0)
    throw std::runtime_error(path + ": not a .npy file");

  const int major = static_cast<uint8_t>(bytes[6]);
  size_t header_len, header_start;
  if (major == 1) {
    header_len = static_cast<uint8_t>(bytes[8]) | static_cast<uint8_t>(bytes[9]) << 8;
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      throw std::runtime_error(path + ": truncated .npy header");
    header_len = 0;
    for (int i = 3; i >= 0; --i)
      header_len = header_len << 8 | static_cast<uint8_t>(bytes[8 + i]);
    header_start = 12;
  } else {
    throw std::runtime_error(path + ": .npy format version " + std::to_string(major) +
                             " is not supported (expected 1, 2 or 3)");
  }
  if (bytes.size() - header_start < header_len)
    throw std::runtime_error(path + ": truncated .npy header");

  const std::string header = bytes.substr(header_start, header_len);
  HostTensor t = HeaderParser(path, header).parse();
  size_t nbytes = dtype_size(t.dtype);
  for (int64_t dim : t.shape)
    if (__builtin_mul_overflow(nbytes, static_cast<size_t>(dim), &nbytes))
      throw std::runtime_error(path + ": shape " + describe(t.dtype, t.shape) +
                               " is too large");
  const size_t data_start = header_start + header_len;
  if (bytes.size() - data_start != nbytes)
    throw std::runtime_error(path + ": " + std::to_string(bytes.size() - data_start) +
                             " bytes of data, " + describe(t.dtype, t.shape) +
                             " needs " + std::to_string(nbytes));
  t.data.assign(bytes.begin() + data_start, bytes.end());
  return t;
}

void write_npy(const std::string &path, const HostTensor &t) {
  const char *descr = nullptr;
  for (const auto &[dtype, name] : kDescrs)
    if (t.dtype == dtype)
      descr = name;
  if (!descr)
    throw std::runtime_error(path + ": numpy has no dtype for " +
                             std::string(dtype_name(t.dtype)));
  size_t nbytes = dtype_size(t.dtype);
  for (int64_t dim : t.shape)
    nbytes *= static_cast<size_t>(dim);
  if (t.data.size() != nbytes)
    throw std::runtime_error(path + ": " + std::to_string(t.data.size()) +
                             " bytes of data for " + describe(t.dtype, t.shape));
  std::string shape;
  for (int64_t dim : t.shape)
    shape += std::to_string(dim) + (t.shape.size() == 1 ? "," : ", ");
  if (t.shape.size() > 1)
    shape.resize(shape.size() - 2);
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': (" + shape + "), }";
  // numpy pads the header with spaces so the data starts 64-byte aligned.
  const size_t unpadded = kMagicSize + 4 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  if (header.size() > 0xffff)
    throw std::runtime_error(path + ": shape too long for a .npy header");

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    throw std::runtime_error(path + ": cannot create");
  out.write(kMagic, kMagicSize);
  const char version_and_length[4] = {1, 0, static_cast<char>(header.size() & 0xff),
                                      static_cast<char>(header.size() >> 8)};
  out.write(version_and_length, 4);
  out << header;
  out.write(reinterpret_cast<const char *>(t.data.data()),
            static_cast<std::streamsize>(t.data.size()));
  out.close();
  if (!out)
    throw std::runtime_error(path + ": write error");
}

} // namespace llmserve
