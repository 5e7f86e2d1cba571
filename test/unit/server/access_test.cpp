#include "server/access.h"

#include "support/temp_dir.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>

namespace llmserve {
namespace {

TEST(Access, AuthorizationIsBearerAndTheWholeKey) {
  EXPECT_TRUE(authorization_matches("Bearer sekret", "sekret"));
  EXPECT_FALSE(authorization_matches("Bearer sekre", "sekret"));
  EXPECT_FALSE(authorization_matches("Bearer sekrets", "sekret"));
  EXPECT_FALSE(authorization_matches("Bearer sekreT", "sekret"));
  EXPECT_FALSE(authorization_matches("sekret", "sekret"));
  EXPECT_FALSE(authorization_matches("bearer sekret", "sekret"));
  EXPECT_FALSE(authorization_matches("", "sekret"));
  EXPECT_FALSE(authorization_matches("Bearer ", "")); // no key: nothing matches
}

TEST(Access, LoopbackBindsHostsAndOrigins) {
  for (const char *host : {"127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"})
    EXPECT_TRUE(is_loopback_bind(host)) << host;
  for (const char *host : {"0.0.0.0", "::", "10.0.0.2", "example.com", "127.0.0.1.nip.io"})
    EXPECT_FALSE(is_loopback_bind(host)) << host;

  for (const char *host : {"", "localhost", "localhost:8000", "127.0.0.1", "127.0.0.1:1",
                           "[::1]", "[::1]:8000"})
    EXPECT_TRUE(loopback_host_header(host)) << host;
  for (const char *host : {"evil.example", "evil.example:8000", "localhost.evil.example",
                           "127.0.0.1.nip.io:80", "[::2]:80"})
    EXPECT_FALSE(loopback_host_header(host)) << host;

  for (const char *origin : {"", "http://localhost", "http://localhost:3000",
                             "https://127.0.0.1", "http://[::1]:5173"})
    EXPECT_TRUE(loopback_origin(origin)) << origin;
  for (const char *origin : {"null", "http://evil.example", "http://localhost.evil.example",
                             "file://", "http://localhost/path", "localhost"})
    EXPECT_FALSE(loopback_origin(origin)) << origin;
}

TEST(Access, TheKeyComesFromTheFlagTheFileOrTheEnvironment) {
  const auto dir = test::fresh_dir();
  const std::string file = (dir / "key").string();
  test::write_file(file, "from-file\r\nsecond line\n");
  unsetenv("LLMSERVE_API_KEY");
  EXPECT_EQ(resolve_api_key("flag", file), "flag");
  EXPECT_EQ(resolve_api_key("", file), "from-file");
  EXPECT_EQ(resolve_api_key("", ""), "");
  setenv("LLMSERVE_API_KEY", "from-env", 1);
  EXPECT_EQ(resolve_api_key("", ""), "from-env");
  EXPECT_EQ(resolve_api_key("", file), "from-file");
  unsetenv("LLMSERVE_API_KEY");

  try {
    resolve_api_key("", (dir / "missing").string());
    FAIL() << "no error";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("cannot read --api-key-file"), std::string::npos);
  }
  test::write_file(dir / "empty", "\n");
  EXPECT_THROW(resolve_api_key("", (dir / "empty").string()), std::runtime_error);
}

} // namespace
} // namespace llmserve
