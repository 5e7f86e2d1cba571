#include "server/access.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace llmserve {
namespace {

constexpr std::string_view kBearer = "Bearer ";

// `authority` without a trailing ":port".
std::string_view without_port(std::string_view authority) {
  if (!authority.empty() && authority.front() == '[') { // [::1]:8000
    size_t close = authority.find(']');
    return close == std::string_view::npos ? authority : authority.substr(0, close + 1);
  }
  size_t colon = authority.rfind(':');
  return colon == std::string_view::npos ? authority : authority.substr(0, colon);
}

bool loopback_name(std::string_view host) {
  return host == "localhost" || host == "[::1]" || host == "::1" ||
         (host.substr(0, 4) == "127." && host.find_first_not_of("0123456789.") ==
                                             std::string_view::npos);
}

} // namespace

bool authorization_matches(std::string_view header, std::string_view key) {
  if (key.empty() || header.substr(0, kBearer.size()) != kBearer)
    return false;
  const std::string_view given = header.substr(kBearer.size());
  // Every byte of the key is compared whatever matched before it.
  unsigned char difference = given.size() == key.size() ? 0 : 1;
  for (size_t i = 0; i < key.size(); ++i)
    difference |= static_cast<unsigned char>(key[i] ^ (i < given.size() ? given[i] : 0));
  return difference == 0;
}

bool is_loopback_bind(std::string_view host) { return loopback_name(host); }

bool loopback_host_header(std::string_view host) {
  return host.empty() || loopback_name(without_port(host));
}

bool loopback_origin(std::string_view origin) {
  if (origin.empty())
    return true;
  for (std::string_view scheme : {"http://", "https://"})
    if (origin.substr(0, scheme.size()) == scheme) {
      std::string_view authority = origin.substr(scheme.size());
      return authority.find('/') == std::string_view::npos &&
             loopback_name(without_port(authority));
    }
  return false;
}

std::string resolve_api_key(const std::string &key, const std::string &key_file) {
  if (!key.empty())
    return key;
  if (!key_file.empty()) {
    std::ifstream file(key_file);
    if (!file)
      throw std::runtime_error("cannot read --api-key-file " + key_file + ": " +
                               std::strerror(errno));
    std::string line;
    std::getline(file, line);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
      line.pop_back();
    if (line.empty())
      throw std::runtime_error("--api-key-file " + key_file + " holds no key on its first line");
    return line;
  }
  const char *env = std::getenv("LLMSERVE_API_KEY");
  return env ? env : "";
}

} // namespace llmserve
