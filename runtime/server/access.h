// Who may use the server: the API key, compared in constant time, and the
// Host and Origin a loopback-bound server accepts, so that a web page the
// user visits cannot reach it through DNS rebinding (docs/server.md).
#ifndef LLMSERVE_SERVER_ACCESS_H
#define LLMSERVE_SERVER_ACCESS_H

#include <string>
#include <string_view>

namespace llmserve {

// Whether an Authorization header is "Bearer <key>". The time it takes
// depends on the lengths only, not on where the header and key differ.
bool authorization_matches(std::string_view header, std::string_view key);

// Whether `host` (a --host value) binds only loopback addresses.
bool is_loopback_bind(std::string_view host);

// For a loopback-bound server: whether a request's Host header (absent:
// empty) names a loopback host, with or without a port.
bool loopback_host_header(std::string_view host);
// Whether an Origin header (absent: empty) is a loopback origin
// ("http://localhost:3000"); "null" and other sites are not.
bool loopback_origin(std::string_view origin);

// The API key: --api-key, else the file --api-key-file names (its first
// line), else the environment's LLMSERVE_API_KEY; empty: no key. Throws
// std::runtime_error when the file cannot be read or holds no key.
std::string resolve_api_key(const std::string &key, const std::string &key_file);

} // namespace llmserve

#endif // LLMSERVE_SERVER_ACCESS_H
