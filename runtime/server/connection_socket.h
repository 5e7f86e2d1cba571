// The socket of one TCP connection of this process, found by its two
// addresses, and whether its peer has hung up. For an HTTP handler that must
// notice a client that has gone while it waits, when the HTTP library does
// not hand the socket over.
#ifndef LLMSERVE_SERVER_CONNECTION_SOCKET_H
#define LLMSERVE_SERVER_CONNECTION_SOCKET_H

#include <string>

namespace llmserve {

// The open socket whose local and peer addresses (numeric, as inet_ntop
// writes them) and ports are these, or -1.
int find_connection_socket(const std::string &local_address, int local_port,
                           const std::string &peer_address, int peer_port);
// Whether the peer of `socket` has closed its end or the connection broke;
// false for -1.
bool peer_has_closed(int socket);

} // namespace llmserve

#endif // LLMSERVE_SERVER_CONNECTION_SOCKET_H
