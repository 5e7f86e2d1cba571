"""Starts `llmrun serve` on a free port of 127.0.0.1 and stops it, for the
server tests. Every wait is bounded; a server that does not start or stop in
time fails the test. LLMSERVE_TEST_SERVE_ARGS adds options to every server
(a suite run again with --no-overlap)."""

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time

START_TIMEOUT = 60
STOP_TIMEOUT = 30


def free_port():
    """A TCP port of 127.0.0.1 nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kv_block_size(metrics):
    """The KV block size vllm:cache_config_info reports in `metrics`."""
    info = next(k for k in metrics if k.startswith("vllm:cache_config_info"))
    return int(info.split('block_size="')[1].split('"')[0])


class ServerProcess:
    def __init__(self, llmrun, bundle, *args, env=None):
        self.log = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(
            [llmrun, "serve", bundle, "--port", "0", "--threads", "1",
             *os.environ.get("LLMSERVE_TEST_SERVE_ARGS", "").split(), *args],
            stdout=self.log, stderr=subprocess.STDOUT, text=True,
            env=None if env is None else {**os.environ, **env})
        self.port = self._wait_for_port()
        self.host = "127.0.0.1"

    def _wait_for_port(self):
        deadline = time.time() + START_TIMEOUT
        while time.time() < deadline:
            match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", self.output())
            if match:
                return int(match.group(1))
            if self.process.poll() is not None:
                raise RuntimeError("llmrun serve exited:\n" + self.output())
            time.sleep(0.05)
        self.process.kill()
        raise RuntimeError("llmrun serve did not start:\n" + self.output())

    def output(self):
        self.log.seek(0)
        return self.log.read()

    def connection(self, timeout=60):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=60):
        """(status, headers, parsed JSON or text) of one request."""
        conn = self.connection(timeout)
        data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
        conn.request(method, path, body=data,
                     headers={"Content-Type": "application/json", **(headers or {})})
        response = conn.getresponse()
        raw = response.read().decode("utf-8")
        conn.close()
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = raw
        return response.status, dict(response.getheaders()), parsed

    def post(self, path, body, **kwargs):
        return self.request("POST", path, body, **kwargs)

    def metrics(self):
        status, _, text = self.request("GET", "/metrics")
        assert status == 200, text
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values

    def wait_until_idle(self, finished=0, timeout=20):
        """Metrics once at least `finished` requests have finished, and
        nothing runs or waits and no KV block is held."""
        deadline = time.time() + timeout
        while True:
            m = self.metrics()
            num_finished = sum(v for k, v in m.items()
                               if k.startswith("llmserve:request_success_total"))
            if (num_finished >= finished and
                    m["llmserve:num_requests_running"] == 0 and
                    m["llmserve:num_requests_waiting"] == 0 and
                    m["llmserve:kv_cache_usage_perc"] == 0):
                return m
            if time.time() > deadline:
                raise AssertionError(f"server not idle after {timeout} s: {m}")
            time.sleep(0.05)

    def stop(self, sig=signal.SIGTERM):
        """Sends `sig` and returns the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError("llmrun serve did not stop:\n" + self.output())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.log.close()


def stream_events(response):
    """The JSON events of an SSE response, up to and excluding [DONE]; raises
    if the stream ends without [DONE]."""
    events = []
    for raw in response:
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line.startswith("data: "):
            continue
        payload = line[len("data: "):]
        if payload == "[DONE]":
            return events
        events.append(json.loads(payload))
    raise AssertionError("stream ended without data: [DONE]")
