// Files for tests: a fresh directory per test, whole-file reads and writes,
// and raw safetensors bytes.
#ifndef LLMSERVE_TEST_SUPPORT_TEMP_DIR_H
#define LLMSERVE_TEST_SUPPORT_TEMP_DIR_H

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace llmserve::test {

// A directory named after the running test, emptied on construction.
inline std::filesystem::path fresh_dir(const std::string &suffix = "") {
  const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
  auto dir = std::filesystem::path(::testing::TempDir()) / "llmserve_tests" /
             (std::string(info->test_suite_name()) + "." + info->name() + suffix);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline void write_file(const std::filesystem::path &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

inline std::string read_file(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A safetensors file as its parts: the header length (8 bytes, little
// endian), the header text and the data section.
inline std::string safetensors_bytes(uint64_t header_length, const std::string &header,
                                     const std::string &data) {
  std::string bytes;
  for (int i = 0; i < 8; ++i)
    bytes.push_back(static_cast<char>(header_length >> (8 * i)));
  return bytes + header + data;
}

inline std::string safetensors_bytes(const std::string &header, const std::string &data) {
  return safetensors_bytes(header.size(), header, data);
}

} // namespace llmserve::test

#endif // LLMSERVE_TEST_SUPPORT_TEMP_DIR_H
