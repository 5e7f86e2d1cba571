#include "server/connection_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace llmserve {
namespace {

int port_of(int socket, bool peer) {
  sockaddr_in address{};
  socklen_t size = sizeof address;
  peer ? getpeername(socket, reinterpret_cast<sockaddr *>(&address), &size)
       : getsockname(socket, reinterpret_cast<sockaddr *>(&address), &size);
  return ntohs(address.sin_port);
}

TEST(ConnectionSocket, FindsTheServerEndAndSeesTheHangUp) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr *>(&address), sizeof address), 0);
  ASSERT_EQ(listen(listener, 1), 0);
  const int server_port = port_of(listener, false);
  int client = socket(AF_INET, SOCK_STREAM, 0);
  address.sin_port = htons(uint16_t(server_port));
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr *>(&address), sizeof address), 0);
  int accepted = accept(listener, nullptr, nullptr);
  ASSERT_GE(accepted, 0);
  const int client_port = port_of(client, false);

  EXPECT_EQ(find_connection_socket("127.0.0.1", server_port, "127.0.0.1", client_port),
            accepted);
  EXPECT_EQ(find_connection_socket("127.0.0.1", client_port, "127.0.0.1", server_port),
            client);
  EXPECT_EQ(find_connection_socket("127.0.0.2", server_port, "127.0.0.1", client_port), -1);
  EXPECT_EQ(find_connection_socket("127.0.0.1", server_port, "127.0.0.1", 1), -1);

  EXPECT_FALSE(peer_has_closed(accepted));
  EXPECT_FALSE(peer_has_closed(-1));
  close(client);
  EXPECT_TRUE(peer_has_closed(accepted));
  close(accepted);
  close(listener);
}

} // namespace
} // namespace llmserve
