#!/usr/bin/env python3
"""`llmrun serve` against clients that hold connections: slow and idle
sockets cost the server no thread, so /health stays quick under 600
slowloris sockets and 10,000 idle ones; a request must arrive whole within
--http-read-timeout; one client address gets at most
--max-connections-per-client connections; oversized heads and malformed
requests get JSON errors; keep-alive connections carry requests one after
another, streams included.

    connections_test.py <llmrun> <bundles-dir>
"""

import http.client
import json
import os
import resource
import socket
import struct
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_process import ServerProcess  # noqa: E402

LLMRUN, BUNDLES = sys.argv[1], sys.argv[2]
BUNDLE = os.path.join(BUNDLES, "llama.llmb")


def open_socket(server, source="127.0.0.1"):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # Closed with a reset, so that thousands of closes leave no local port in
    # TIME_WAIT for the next minute, where other tests' servers bind.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.bind((source, 0))
    s.connect((server.host, server.port))
    return s


def receive_all(s, timeout):
    """Everything the server sends until it closes (or `timeout` passes)."""
    s.settimeout(timeout)
    data = b""
    try:
        while True:
            piece = s.recv(65536)
            if not piece:
                return data
            data += piece
    except socket.timeout:
        return data


def health_seconds(server, source="127.0.0.1"):
    """How long a GET /health from `source` takes, on a fresh connection."""
    start = time.monotonic()
    s = open_socket(server, source)
    s.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    reply = receive_all(s, 10)
    s.close()
    assert reply.startswith(b"HTTP/1.1 200"), reply
    return time.monotonic() - start


def status_and_error(reply):
    head, _, body = reply.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, json.loads(body)["error"]["message"], head


class SlowAndIdleClients(unittest.TestCase):
    def test_slowloris_sockets_do_not_delay_health(self):
        # 600 sockets each trickle a request head a line at a time: with a
        # thread per connection they held every thread.
        with ServerProcess(LLMRUN, BUNDLE) as server:
            sockets = [open_socket(server) for _ in range(600)]
            stop = threading.Event()

            def trickle():
                for s in sockets:
                    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: localhost\r\n")
                while not stop.wait(0.5):
                    for s in sockets:
                        s.sendall(b"X-Slow: 1\r\n")

            writer = threading.Thread(target=trickle)
            writer.start()
            try:
                time.sleep(1)
                worst = max(health_seconds(server) for _ in range(10))
                self.assertLess(worst, 0.5)
                status, _, reply = server.post("/v1/completions",
                                               {"prompt": "hi", "max_tokens": 2})
                self.assertEqual(status, 200, reply)
            finally:
                stop.set()
                writer.join()
                for s in sockets:
                    s.close()
            self.assertEqual(server.stop(), 0)

    def test_ten_thousand_idle_connections_do_not_delay_health(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard < 10_500:
            self.skipTest(f"the open-file limit ({hard}) is below 10,500")
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 20_000) if hard !=
                                                    resource.RLIM_INFINITY else 20_000, hard))
        with ServerProcess(LLMRUN, BUNDLE) as server:
            # From ten loopback addresses, 1,000 each: within the cap per client.
            sockets = [open_socket(server, f"127.0.0.{2 + i % 10}") for i in range(10_000)]
            try:
                time.sleep(0.5)
                worst = max(health_seconds(server, "127.0.0.1") for _ in range(10))
                self.assertLess(worst, 0.5)
            finally:
                for s in sockets:
                    s.close()
            self.assertEqual(server.stop(), 0)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


class Limits(unittest.TestCase):
    def test_a_request_must_arrive_within_the_read_timeout(self):
        with ServerProcess(LLMRUN, BUNDLE, "--http-read-timeout", "1") as server:
            partial = open_socket(server)
            partial.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: localhost\r\n")
            idle = open_socket(server)
            start = time.monotonic()
            status, message, head = status_and_error(receive_all(partial, 10))
            self.assertEqual(status, 408)
            self.assertIn("within 1 s", message)
            self.assertIn(b"Connection: close", head)
            self.assertLess(time.monotonic() - start, 5)
            # A connection that sends nothing is closed the same way.
            self.assertTrue(receive_all(idle, 10).startswith(b"HTTP/1.1 408"))
            partial.close()
            idle.close()
            # A whole request in time is served.
            self.assertLess(health_seconds(server), 0.5)
            self.assertEqual(server.stop(), 0)

    def test_connections_per_client_are_capped(self):
        with ServerProcess(LLMRUN, BUNDLE, "--max-connections-per-client", "3") as server:
            held = [open_socket(server) for _ in range(3)]
            time.sleep(0.2)
            extra = open_socket(server)
            extra.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
            reply = receive_all(extra, 10)
            status, message, head = status_and_error(reply)
            self.assertEqual(status, 503)
            self.assertIn("too many connections from 127.0.0.1", message)
            self.assertIn(b"Retry-After: 1", head)
            extra.close()
            # Another client is served; so is this one once it closes one.
            self.assertLess(health_seconds(server, "127.0.0.2"), 0.5)
            held.pop().close()
            time.sleep(0.2)
            self.assertLess(health_seconds(server), 0.5)
            for s in held:
                s.close()
            self.assertEqual(server.stop(), 0)

    def test_head_and_body_limits_follow_their_flags(self):
        with ServerProcess(LLMRUN, BUNDLE, "--max-request-body", "100",
                           "--max-request-head", "2048") as server:
            status, _, response = server.post("/tokenize", {"prompt": "x" * 200})
            self.assertEqual(status, 413)
            self.assertIn("limit of 100 bytes", response["error"]["message"])
            status, _, _ = server.post("/tokenize", {"prompt": "x" * 50})
            self.assertEqual(status, 200)
            status, _, response = server.request("GET", "/health",
                                                 headers={"X-Pad": "a" * 3000})
            self.assertEqual(status, 431)
            self.assertIn("limit of 2048 bytes", response["error"]["message"])
            self.assertEqual(server.stop(), 0)

    def test_oversized_heads_and_malformed_requests_get_json_errors(self):
        with ServerProcess(LLMRUN, BUNDLE) as server:
            s = open_socket(server)
            s.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * 20000 +
                      b"\r\n\r\n")
            status, message, _ = status_and_error(receive_all(s, 10))
            s.close()
            self.assertEqual(status, 431)
            self.assertIn("request head is larger than the limit", message)
            s = open_socket(server)
            s.sendall(b"HELLO\r\n\r\n")
            status, message, _ = status_and_error(receive_all(s, 10))
            s.close()
            self.assertEqual(status, 400)
            self.assertIn("malformed HTTP request", message)
            self.assertEqual(server.stop(), 0)


class KeepAlive(unittest.TestCase):
    def test_one_connection_carries_requests_and_streams(self):
        with ServerProcess(LLMRUN, BUNDLE) as server:
            conn = server.connection()

            def send(method, path, body=None):
                conn.request(method, path, body=json.dumps(body) if body else None,
                             headers={"Content-Type": "application/json"})
                response = conn.getresponse()
                return response.status, response.read()

            self.assertEqual(send("GET", "/health")[0], 200)
            first = conn.sock
            status, body = send("POST", "/v1/completions", {"prompt": "hi", "max_tokens": 3})
            self.assertEqual(status, 200, body)
            status, body = send("POST", "/v1/completions",
                                {"prompt": "hi", "max_tokens": 3, "stream": True})
            self.assertEqual(status, 200)
            self.assertTrue(body.rstrip().endswith(b"data: [DONE]"), body)
            status, body = send("POST", "/v1/completions", {"prompt": "hi", "max_tokens": 0})
            self.assertEqual(status, 400, body)
            self.assertEqual(send("GET", "/v1/models")[0], 200)
            self.assertIs(conn.sock, first, "every request went over the first connection")
            conn.close()
            self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
