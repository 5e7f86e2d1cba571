#!/usr/bin/env python3
"""A soak run of `llmrun serve`: many requests of random shapes against a
KV pool small enough that the engine preempts, then checks that nothing was
lost or leaked. A benchmark, not a CI test (docs/server.md, "Soak").

The load: prompts that share prefixes, 1 to 48 output tokens, some choices
n > 1, some stop strings, some structured output, half of them greedy, and a
fifth streamed and cancelled after a few chunks. Checked and reported:

- no status but 200, and 503 with Retry-After when the queue is full (the
  client then waits and tries again, so every request completes);
- no KV block held by a request at the end (prefix-cache blocks are free);
- every completed greedy request gives, replayed alone on the idle server,
  the same text;
- resident memory after each thousand requests, flat within 10% of its value
  after the first thousand.

Usage: soak.py LLMRUN BUNDLE [--requests N] [--concurrency C] [--seed S]
"""

import argparse
import concurrent.futures
import http.client
import json
import os
import random
import re
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_process import ServerProcess  # noqa: E402

PREFIXES = ["And it came to pass", "In the beginning", "LAWYER, n.", "Blessed are the",
            "The LORD is my shepherd", "ABSURDITY, n.", "Quote John 11:35.", "Define WIT."]
MAX_TRIES = 100
WORDS = "and the of to in that he shall unto for his a they be is him them not".split()


def resident_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1)) * 1024


def make_request(rng):
    prompt = rng.choice(PREFIXES) + " " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 40)))
    body = {"prompt": prompt, "max_tokens": rng.randint(1, 48),
            "temperature": 0 if rng.random() < 0.5 else 0.9, "seed": rng.randint(0, 1 << 30)}
    if rng.random() < 0.1:
        body["n"] = rng.randint(2, 3)
    if rng.random() < 0.15:
        body["stop"] = [rng.choice(WORDS) + " "]
    if rng.random() < 0.05:
        body["structured_outputs"] = {"regex": "[A-Z][a-z]{1,8}( [a-z]{1,8}){0,4}\\."}
    cancel = rng.random() < 0.2
    if cancel:
        body["stream"] = True
    return body, cancel


class Soak:
    def __init__(self, server, seed):
        self.server = server
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.statuses = {}
        self.greedy = []  # (body, text) of completed greedy requests

    def count(self, status):
        with self.lock:
            self.statuses[status] = self.statuses.get(status, 0) + 1

    def run_one(self, body, cancel):
        # A full queue answers 503: the client waits as Retry-After says and
        # tries again, as a well-behaved client does.
        for _ in range(MAX_TRIES):
            if self.try_once(body, cancel) != 503:
                return
        self.count("gave up after 503s")

    def try_once(self, body, cancel):
        conn = self.server.connection(timeout=300)
        try:
            conn.request("POST", "/v1/completions", json.dumps(body),
                         {"Content-Type": "application/json"})
            response = conn.getresponse()
            self.count(response.status)
            if response.status == 503:
                retry_after = response.getheader("Retry-After")
                if not retry_after:
                    self.count("503 without Retry-After")
                response.read()
                time.sleep(float(retry_after or 1))
                return 503
            if response.status != 200:
                response.read()
                return response.status
            if cancel:
                for _ in range(3):  # a few chunks, then hang up
                    if not response.readline():
                        break
                return 200
            result = json.loads(response.read())
            if body["temperature"] == 0 and all(c["finish_reason"] in ("stop", "length")
                                                for c in result["choices"]):
                with self.lock:
                    self.greedy.append((body, [c["text"] for c in result["choices"]]))
            return 200
        finally:
            conn.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("llmrun")
    parser.add_argument("bundle")
    parser.add_argument("--requests", type=int, default=10000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--replay", type=int, default=500,
                        help="completed greedy requests replayed alone")
    args = parser.parse_args()

    failures = []
    with ServerProcess(args.llmrun, args.bundle, "--kv-cache-memory", "2MiB",
                       "--max-num-seqs", "64", "--max-queued-requests", "64") as server:
        soak = Soak(server, args.seed)
        memory = []
        with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
            for start in range(0, args.requests, 1000):
                batch = [make_request(soak.rng) for _ in range(min(1000, args.requests - start))]
                list(pool.map(lambda r: soak.run_one(*r), batch))
                memory.append(resident_bytes(server.process.pid))
                print(f"{start + len(batch)} requests: resident {memory[-1] / 2**20:.1f} MiB, "
                      f"statuses {soak.statuses}", flush=True)
        # Cancelled streams end at the engine's next step: wait for that.
        try:
            metrics = server.wait_until_idle(timeout=60)
        except AssertionError as e:
            failures.append(f"requests still run or hold KV blocks: {e}")
            metrics = server.metrics()
        preemptions = metrics.get("llmserve:num_preemptions_total", 0)
        unexpected = {s: n for s, n in soak.statuses.items() if s not in (200, 503)}
        if unexpected:
            failures.append(f"statuses other than 200 and 503: {unexpected}")

        replayed = mismatched = 0
        for body, texts in random.Random(args.seed).sample(soak.greedy,
                                                           min(args.replay, len(soak.greedy))):
            status, _, result = server.post("/v1/completions", body)
            replayed += 1
            if status != 200 or [c["text"] for c in result["choices"]] != texts:
                mismatched += 1
                if mismatched <= 3:
                    failures.append(f"greedy output differs alone: {json.dumps(body)[:200]}")
        baseline = memory[0]
        drift = max(abs(m - baseline) / baseline for m in memory[1:]) if len(memory) > 1 else 0.0
        if drift > 0.10:
            failures.append(f"resident memory moved {drift:.1%} from its value after the first "
                            f"thousand requests")
    print(f"{args.requests} requests, {preemptions:.0f} preemptions, statuses {soak.statuses}; "
          f"{replayed} greedy outputs replayed alone, {mismatched} differ; resident memory "
          f"{baseline / 2**20:.1f} MiB after the first thousand, at most {drift:.1%} away after")
    for failure in failures:
        print("FAIL:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
