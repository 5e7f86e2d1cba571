#include "server/connection_socket.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>
#include <filesystem>

namespace llmserve {
namespace {

// The numeric address and port of an IPv4 or IPv6 socket address.
std::string address_text(const sockaddr_storage &address, int *port) {
  char text[INET6_ADDRSTRLEN] = "";
  if (address.ss_family == AF_INET) {
    const auto &v4 = reinterpret_cast<const sockaddr_in &>(address);
    inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text);
    *port = ntohs(v4.sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto &v6 = reinterpret_cast<const sockaddr_in6 &>(address);
    inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof text);
    *port = ntohs(v6.sin6_port);
  }
  return text;
}

} // namespace

int find_connection_socket(const std::string &local_address, int local_port,
                           const std::string &peer_address, int peer_port) {
  std::error_code error;
  for (const auto &entry : std::filesystem::directory_iterator("/proc/self/fd", error)) {
    const int fd = std::atoi(entry.path().filename().c_str());
    sockaddr_storage local{}, peer{};
    socklen_t local_size = sizeof local, peer_size = sizeof peer;
    if (getsockname(fd, reinterpret_cast<sockaddr *>(&local), &local_size) != 0 ||
        getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &peer_size) != 0)
      continue;
    int found_local_port = -1, found_peer_port = -1;
    if (address_text(local, &found_local_port) == local_address &&
        found_local_port == local_port &&
        address_text(peer, &found_peer_port) == peer_address && found_peer_port == peer_port)
      return fd;
  }
  return -1;
}

bool peer_has_closed(int socket) {
  pollfd p{socket, POLLRDHUP, 0};
  return socket >= 0 && ::poll(&p, 1, 0) > 0 &&
         (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

} // namespace llmserve
