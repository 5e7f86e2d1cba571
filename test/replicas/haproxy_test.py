#!/usr/bin/python3
"""Three `llmrun serve` replicas on loopback behind HAProxy (Debian's), with
deploy/haproxy/haproxy.cfg as shipped: failover, a rolling restart, session
affinity and KV events, each checked through the proxy.

  haproxy_test.py <llmrun> <bundle>            the tests (a bundle slow enough that
                                               a 200-token stream is still running
                                               when its replica is killed: the
                                               shipped model)
  haproxy_test.py <llmrun> <bundle> --bench [N]
      throughput through HAProxy over N replicas (default: three, or one a
      CPU on smaller machines) against one replica, each on one thread
      (llmrun bench serve, the same workload)
"""

import concurrent.futures
import csv
import http.client
import io
import json
import os
import random
import signal
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "server"))
from kv_events_test import Replica, Subscriber  # noqa: E402
from server_process import ServerProcess, free_port, kv_block_size, stream_events  # noqa: E402

CONFIG = os.path.join(os.path.dirname(os.path.dirname(HERE)), "deploy", "haproxy", "haproxy.cfg")
LLMRUN = BUNDLE = None
NUM_REPLICAS = 3


class Cluster:
    """Replicas on fixed ports (so one can restart where it was) and HAProxy."""

    def __init__(self, *replica_args, replicas=NUM_REPLICAS):
        self.replica_args = replica_args
        self.ports = [free_port() for _ in range(replicas)]
        self.subscribers = [Subscriber() for _ in range(replicas)]
        self.replicas = [None] * replicas
        self.haproxy = None
        try:
            self.start_all(replicas)
        except BaseException:
            self.close()  # the replicas that did start
            raise

    def start_all(self, replicas):
        for i in range(replicas):
            self.start(i)
        self.port, self.stats_port = free_port(), free_port()
        env = {**os.environ, "LLMSERVE_BIND": f"127.0.0.1:{self.port}",
               "LLMSERVE_STATS_BIND": f"127.0.0.1:{self.stats_port}"}
        # The config names three replicas; fewer leave the rest down.
        for i in range(NUM_REPLICAS):
            port = self.ports[i] if i < replicas else free_port()
            env[f"LLMSERVE_REPLICA_{i + 1}"] = f"127.0.0.1:{port}"
        self.haproxy = subprocess.Popen(["haproxy", "-db", "-f", CONFIG], env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.wait_for(lambda s: all(s[f"replica{i + 1}"] == "UP" for i in range(replicas)))

    def start(self, i):
        self.replicas[i] = ServerProcess(
            LLMRUN, BUNDLE, "--port", str(self.ports[i]), "--served-model-name", "m",
            "--kv-events-endpoint", f"tcp://*:{self.subscribers[i].port}",
            "--kv-events-topic", f"kv@replica{i + 1}@m", *self.replica_args)
        self.subscribers[i].wait_connected()

    def status(self):
        """HAProxy's view: {'replica1': 'UP', ...}."""
        conn = http.client.HTTPConnection("127.0.0.1", self.stats_port, timeout=5)
        conn.request("GET", "/stats;csv")
        text = conn.getresponse().read().decode().lstrip("# ")
        conn.close()
        return {row["svname"]: row["status"].split()[0] for row in csv.DictReader(io.StringIO(text))
                if row["pxname"] == "llmserve" and row["svname"].startswith("replica")}

    def wait_for(self, condition, timeout=30):
        deadline = time.time() + timeout
        while True:
            try:
                status = self.status()
                if condition(status):
                    return status
            except OSError:
                status = None
            if time.time() > deadline:
                raise AssertionError(f"HAProxy never reached the state wanted: {status}")
            time.sleep(0.1)

    def post(self, body, headers=None, timeout=60):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        conn.request("POST", "/v1/completions", json.dumps(body),
                     {"Content-Type": "application/json", **(headers or {})})
        response = conn.getresponse()
        data = response.read()
        conn.close()
        return response.status, response.getheader("X-Served-By"), json.loads(data)

    def open_stream(self, max_tokens, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        conn.request("POST", "/v1/completions",
                     json.dumps({"prompt": "hi", "max_tokens": max_tokens, "ignore_eos": True,
                                 "stream": True}),
                     {"Content-Type": "application/json", **(headers or {})})
        response = conn.getresponse()
        return conn, response

    def close(self):
        if self.haproxy is not None:
            self.haproxy.terminate()
            self.haproxy.wait(10)
        for r in self.replicas:
            if r is not None:
                r.__exit__()
        for s in self.subscribers:
            s.close()


def finish_reason(stream):
    """The stream's finish reason, or the error that cut it."""
    conn, response = stream
    try:
        return stream_events(response)[-1]["choices"][0]["finish_reason"]
    except (AssertionError, OSError, http.client.HTTPException) as e:
        return f"cut: {type(e).__name__}"
    finally:
        conn.close()


class Replicas(unittest.TestCase):
    def setUp(self):
        self.cluster = Cluster()

    def tearDown(self):
        self.cluster.close()

    def test_requests_spread_over_the_replicas(self):
        served = set()
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            for status, by, body in pool.map(
                    lambda i: self.cluster.post({"prompt": f"hello {i}", "max_tokens": 16,
                                                 "ignore_eos": True}), range(24)):
                self.assertEqual(status, 200, body)
                served.add(by)
        self.assertEqual(served, {"replica1", "replica2", "replica3"})

    def test_failover_fails_only_the_killed_replicas_requests(self):
        # Twelve streams, each under way (its first token received) when
        # replica2 is killed.
        with concurrent.futures.ThreadPoolExecutor(12) as pool:
            streams = list(pool.map(lambda _: self.cluster.open_stream(250), range(12)))
            list(pool.map(lambda s: s[1].readline(), streams))
        self.cluster.replicas[1].process.kill()
        by = [r.getheader("X-Served-By") for _, r in streams]
        self.assertEqual(set(by), {"replica1", "replica2", "replica3"})
        reasons = [finish_reason(s) for s in streams]
        killed = [reason for served_by, reason in zip(by, reasons) if served_by == "replica2"]
        others = [reason for served_by, reason in zip(by, reasons) if served_by != "replica2"]
        self.assertEqual(others, ["length"] * len(others))
        # A stream under way is cut, never completed elsewhere behind the
        # client's back.
        self.assertTrue(all(r.startswith("cut") for r in killed), killed)
        # New requests, at once and later, go to the others.
        for i in range(12):
            status, served_by, body = self.cluster.post({"prompt": f"after {i}", "max_tokens": 4})
            self.assertEqual(status, 200, body)
            self.assertIn(served_by, {"replica1", "replica3"})
        self.cluster.wait_for(lambda s: s["replica2"] == "DOWN")

    def test_rolling_restart_loses_no_stream(self):
        for i in range(NUM_REPLICAS):
            with concurrent.futures.ThreadPoolExecutor(6) as pool:
                streams = list(pool.map(lambda _: self.cluster.open_stream(250), range(6)))
            replica = self.cluster.replicas[i]
            replica.process.send_signal(signal.SIGTERM)
            deadline = time.time() + 10
            while self.ready(replica):
                self.assertLess(time.time(), deadline, "/ready never turned 503")
                time.sleep(0.01)
            # While it drains: new requests keep succeeding, elsewhere (one
            # HAProxy sends before its health check notices gets 503 and is
            # sent again to another replica).
            for k in range(6):
                status, served_by, body = self.cluster.post({"prompt": f"during {k}", "max_tokens": 4})
                self.assertEqual(status, 200, body)
                self.assertNotEqual(served_by, f"replica{i + 1}")
            self.assertEqual([finish_reason(s) for s in streams], ["length"] * 6)
            self.assertEqual(replica.stop(), 0)
            replica.__exit__()
            self.cluster.start(i)
            self.cluster.wait_for(lambda s: s[f"replica{i + 1}"] == "UP")

    @staticmethod
    def ready(replica):
        try:
            return replica.request("GET", "/ready")[0] == 200
        except OSError:  # drained already and closed
            return False

    def hit_rate(self, metrics):
        queries = sum(m["llmserve:prefix_cache_queries_total"] for m in metrics)
        return sum(m["llmserve:prefix_cache_hits_total"] for m in metrics) / queries

    def chat_turns(self, sessions, turns, header):
        """Multi-turn sessions, each turn's prompt the previous one plus more."""
        rng = random.Random(1)
        histories = {s: [rng.randrange(3, 250) for _ in range(64)] for s in range(sessions)}
        for _ in range(turns):
            for s, history in histories.items():
                history += [rng.randrange(3, 250) for _ in range(16)]
                status, _, body = self.cluster.post(
                    {"prompt": history, "max_tokens": 1},
                    headers={"X-Session-Id": f"session-{s}"} if header else {})
                self.assertEqual(status, 200, body)

    def test_session_affinity_keeps_the_prefix_cache_warm(self):
        self.chat_turns(sessions=6, turns=6, header=True)
        replicated = self.hit_rate([r.metrics() for r in self.cluster.replicas])
        with ServerProcess(LLMRUN, BUNDLE, "--served-model-name", "m") as single:
            self.cluster.port = single.port
            self.chat_turns(sessions=6, turns=6, header=True)
            alone = self.hit_rate([single.metrics()])
        print(f"prefix-cache hit rate: {replicated:.3f} over three replicas, {alone:.3f} alone")
        self.assertGreaterEqual(replicated, 0.95 * alone)

    def test_kv_events_rebuild_each_replicas_blocks(self):
        rng = random.Random(2)
        system = [rng.randrange(3, 250) for _ in range(48)]
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            list(pool.map(lambda i: self.cluster.post(
                {"prompt": system + [rng.randrange(3, 250) for _ in range(20)], "max_tokens": 4}),
                range(30)))
        for i, (replica, subscriber) in enumerate(zip(self.cluster.replicas, self.cluster.subscribers)):
            metrics = replica.wait_until_idle()
            subscriber.drain()
            rebuilt = Replica(self, kv_block_size(metrics), "CPU")
            topics = {rebuilt.apply(m) for m in subscriber.messages}
            self.assertEqual(topics, {f"kv@replica{i + 1}@m".encode()})
            self.assertEqual(len(rebuilt.blocks), metrics["llmserve:num_cached_kv_blocks"])
            self.assertGreater(len(rebuilt.blocks), 0)


def bench(replicas):
    """Output throughput through HAProxy over one replica's, same workload."""
    def run(url):
        result = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"haproxy-bench-{os.getpid()}.json")
        subprocess.run([LLMRUN, "bench", "serve", "--url", url, "--dataset", "random",
                        "--num-prompts", "512", "--random-input-len", "64",
                        "--random-output-len", "64", "--ignore-eos", "--max-concurrency", "48",
                        "--seed", "1", "--tokenizer", BUNDLE, "--result-file", result],
                       capture_output=True, text=True, check=True)
        with open(result) as f:
            report = json.load(f)["runs"][0]["summary"]
        os.remove(result)
        return report
    cluster = Cluster("--threads", "1", replicas=replicas)
    try:
        through = run(f"http://127.0.0.1:{cluster.port}")
        single = run(f"http://127.0.0.1:{cluster.ports[0]}")
    finally:
        cluster.close()
    ratio = through["output_throughput"] / single["output_throughput"]
    print(f"output tok/s: {through['output_throughput']:.1f} through HAProxy over "
          f"{replicas} replicas, {single['output_throughput']:.1f} one replica; "
          f"ratio {ratio:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    LLMRUN, BUNDLE = sys.argv[1], sys.argv[2]
    if "--bench" in sys.argv[3:]:
        rest = sys.argv[sys.argv.index("--bench") + 1:]
        bench(int(rest[0]) if rest else min(NUM_REPLICAS, os.cpu_count()))
    else:
        unittest.main(argv=sys.argv[:1], verbosity=2)
