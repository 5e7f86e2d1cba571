#include "cpu/cpu_features.h"

#include "llmserve/abi.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

namespace llmserve {
namespace {

// The kernel's own account of this CPU: the flags of /proc/cpuinfo, which
// spell some features otherwise (avx512_vnni for avx512vnni).
std::set<std::string> cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      std::set<std::string> flags;
      for (std::string w; words >> w;)
        flags.insert(w);
      return flags;
    }
  return {};
}

std::string cpuinfo_name(const std::string &feature) {
  static const std::map<std::string, std::string> other = {
      {"sse4.2", "sse4_2"},          {"avx512vnni", "avx512_vnni"}, {"avx512bf16", "avx512_bf16"},
      {"avx512fp16", "avx512_fp16"}, {"avxvnni", "avx_vnni"}};
  auto it = other.find(feature);
  return it == other.end() ? feature : it->second;
}

TEST(CpuFeatures, AgreeWithProcCpuinfo) {
  const std::set<std::string> flags = cpuinfo_flags();
  if (flags.empty())
    GTEST_SKIP() << "no flags in /proc/cpuinfo";
  std::vector<std::string> all(std::begin(abi::kCpuFeatures), std::end(abi::kCpuFeatures));
  std::vector<std::string> lacking;
  for (const std::string &feature : all) {
    const bool listed = flags.count(cpuinfo_name(feature)) != 0;
    EXPECT_EQ(cpu_supports(feature), listed) << feature << " (" << cpuinfo_name(feature) << ")";
    if (!listed)
      lacking.push_back(feature);
  }
  EXPECT_EQ(missing_cpu_features(all), lacking);
}

TEST(CpuFeatures, AnUnknownNameIsNotSupported) {
  EXPECT_FALSE(cpu_supports("avx1024"));
  EXPECT_EQ(missing_cpu_features({"avx1024"}), std::vector<std::string>{"avx1024"});
  EXPECT_TRUE(missing_cpu_features({}).empty());
}

} // namespace
} // namespace llmserve
