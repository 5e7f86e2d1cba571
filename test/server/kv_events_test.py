#!/usr/bin/python3
"""KV events end to end: `llmrun serve --kv-events-endpoint` publishes its
prefix cache's blocks over ZeroMQ; a subscriber here (Debian's python3-zmq)
decodes them with an independent msgpack decoder (python3-msgpack), checks
them against vLLM's schema, recomputes every block hash with python3-cbor2
and hashlib the way llm-d's KV-cache indexer does, and rebuilds the replica's
cached blocks, which must be what /metrics counts.

Usage: kv_events_test.py <llmrun> <work-dir with the bundles of prepare_bundles.py>
"""

import hashlib
import json
import os
import random
import subprocess
import sys
import time
import unittest

import cbor2
import msgpack
import zmq

from server_process import ServerProcess, free_port, kv_block_size

LLMRUN = WORK = None


def bundle(name):
    return os.path.join(WORK, name + ".llmb")


def block_hash(value):
    """The indexer's key: the last 8 bytes of SHA-256 of canonical CBOR."""
    return int.from_bytes(hashlib.sha256(cbor2.dumps(value, canonical=True)).digest()[-8:], "big")


def prompt_keys(tokens, block_size, seed=""):
    """The keys llm-d's indexer computes for a prompt's whole blocks."""
    keys, parent = [], block_hash(seed)
    for start in range(0, len(tokens) - block_size + 1, block_size):
        parent = block_hash([parent, tokens[start:start + block_size], None])
        keys.append(parent)
    return keys


class Subscriber:
    """A SUB socket connected to where the server binds its PUB socket, as
    llm-d's indexer connects to each replica."""

    def __init__(self, topic=b"kv@"):
        self.port = free_port()
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.SUB)
        self.socket.setsockopt(zmq.SUBSCRIBE, topic)
        self.monitor = self.socket.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
        # ZeroMQ retries until the server binds.
        self.socket.setsockopt(zmq.RECONNECT_IVL, 20)
        self.socket.connect(f"tcp://127.0.0.1:{self.port}")
        self.messages = []

    def wait_connected(self, timeout=20):
        """Once the connection is up the subscription follows it at once;
        what the server publishes before that is lost, as with any PUB."""
        if not self.monitor.poll(timeout * 1000):
            raise AssertionError("the server's KV event socket never accepted the subscriber")
        self.monitor.recv_multipart()
        time.sleep(0.3)

    def drain(self, quiet=0.5):
        """Receives until nothing comes for `quiet` seconds."""
        while self.socket.poll(int(quiet * 1000)):
            self.messages.append(self.socket.recv_multipart())

    def close(self):
        self.monitor.close(0)
        self.socket.close(0)
        self.context.term()


class Replica:
    """The blocks a replica holds, rebuilt from its events."""

    def __init__(self, test, block_size, medium, seed=""):
        self.test, self.block_size, self.medium, self.seed = test, block_size, medium, seed
        self.blocks = {}  # hash -> (parent hash, tokens)
        self.last_sequence = None

    def apply(self, message):
        t = self.test
        t.assertEqual(len(message), 3, "a message is [topic, sequence, payload]")
        topic, sequence, payload = message
        t.assertEqual(len(sequence), 8)
        sequence = int.from_bytes(sequence, "big")
        if self.last_sequence is not None:
            t.assertEqual(sequence, self.last_sequence + 1, "sequence numbers are consecutive")
        self.last_sequence = sequence
        batch = msgpack.unpackb(payload, raw=False, strict_map_key=False)
        # vLLM's EventBatch, array-encoded: [ts, events, data_parallel_rank].
        t.assertIsInstance(batch, list)
        t.assertEqual(len(batch), 3)
        ts, events, rank = batch
        t.assertIsInstance(ts, float)
        t.assertLess(abs(ts - time.time()), 120)
        t.assertEqual(rank, 0)
        t.assertTrue(events, "no empty batches")
        for event in events:
            self.apply_event(event)
        return topic

    def apply_event(self, event):
        t = self.test
        kind = event[0]
        if kind == "BlockStored":
            # [tag, block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium]
            t.assertEqual(len(event), 7)
            _, hashes, parent, tokens, block_size, lora_id, medium = event
            t.assertEqual((block_size, lora_id, medium), (self.block_size, None, self.medium))
            t.assertEqual(len(tokens), len(hashes) * self.block_size)
            if parent is not None:
                t.assertIn(parent, self.blocks, "a stored block's parent is cached")
            chain = block_hash(self.seed) if parent is None else parent
            for i, h in enumerate(hashes):
                block = tokens[i * self.block_size:(i + 1) * self.block_size]
                chain = block_hash([chain, block, None])
                t.assertEqual(h, chain, "the block hash is the indexer's chained hash")
                t.assertNotIn(h, self.blocks, "stored twice without a removal")
                self.blocks[h] = (parent if i == 0 else hashes[i - 1], block)
        elif kind == "BlockRemoved":
            t.assertEqual(len(event), 3)
            _, hashes, medium = event
            t.assertEqual(medium, self.medium)
            for h in hashes:
                t.assertIn(h, self.blocks, "removed but never stored")
                del self.blocks[h]
        elif kind == "AllBlocksCleared":
            t.assertEqual(len(event), 1)
            self.blocks.clear()
        else:
            t.fail(f"unknown event {event!r}")


class KvEvents(unittest.TestCase):
    def setUp(self):
        self.subscriber = Subscriber()

    def tearDown(self):
        self.subscriber.close()

    def serve(self, *args):
        server = ServerProcess(LLMRUN, bundle("llama"),
                               "--kv-events-endpoint", f"tcp://*:{self.subscriber.port}",
                               "--kv-events-topic", "kv@replica-0@llama", *args)
        self.subscriber.wait_connected()
        return server

    def run_prompts(self, server, prompts):
        for prompt in prompts:
            status, _, body = server.post("/v1/completions", {"prompt": prompt, "max_tokens": 3,
                                                              "temperature": 0})
            self.assertEqual(status, 200, body)
        return server.wait_until_idle(finished=len(prompts))

    def test_events_rebuild_the_cached_blocks(self):
        rng = random.Random(3)
        with self.serve() as server:
            size = kv_block_size(server.metrics())
            system = [rng.randrange(3, 200) for _ in range(3 * size)]
            prompts = [system + [rng.randrange(3, 200) for _ in range(rng.randrange(1, 3 * size))]
                       for _ in range(12)]
            metrics = self.run_prompts(server, prompts)
            self.subscriber.drain()
            replica = Replica(self, size, "CPU")
            topics = {replica.apply(m) for m in self.subscriber.messages}
            self.assertEqual(topics, {b"kv@replica-0@llama"})
            self.assertEqual(len(replica.blocks), metrics["llmserve:num_cached_kv_blocks"])
            self.assertGreater(len(replica.blocks), 3)
            # What the indexer computes from each prompt names cached blocks:
            # this replica scores for all of the prompt's whole blocks.
            for prompt in prompts:
                for key in prompt_keys(prompt, size):
                    self.assertIn(key, replica.blocks)

    def test_evictions_are_published(self):
        rng = random.Random(5)
        # A pool of a few blocks: new prompts evict the old ones' blocks.
        with self.serve("--kv-cache-memory", "96KiB", "--max-model-len", "64", "--max-num-seqs", "1") as server:
            size = kv_block_size(server.metrics())
            prompts = [[rng.randrange(3, 200) for _ in range(2 * size + 1)] for _ in range(20)]
            metrics = self.run_prompts(server, prompts)
            self.subscriber.drain()
            replica = Replica(self, size, "CPU")
            for m in self.subscriber.messages:
                replica.apply(m)
            kinds = [e[0] for m in self.subscriber.messages
                     for e in msgpack.unpackb(m[2], raw=False)[1]]
            self.assertIn("BlockRemoved", kinds)
            self.assertEqual(len(replica.blocks), metrics["llmserve:num_cached_kv_blocks"])
            self.assertLess(len(replica.blocks), 2 * len(prompts))
            for key in prompt_keys(prompts[-1], size):
                self.assertIn(key, replica.blocks)

    def test_hash_seed_changes_every_hash(self):
        with self.serve("--kv-events-hash-seed", "42") as server:
            size = kv_block_size(server.metrics())
            prompt = list(range(3, 3 + 2 * size))
            self.run_prompts(server, [prompt])
            self.subscriber.drain()
            replica = Replica(self, size, "CPU", seed="42")
            for m in self.subscriber.messages:
                replica.apply(m)
            for key in prompt_keys(prompt, size, seed="42"):
                self.assertIn(key, replica.blocks)
            self.assertFalse(set(prompt_keys(prompt, size)) & set(replica.blocks))

    def test_bad_options_are_refused_at_start(self):
        for args, error in [
                (["--kv-events-endpoint", "nonsense"], "--kv-events-endpoint 'nonsense': "),
                (["--kv-events-endpoint", "tcp://*:5557", "--no-prefix-caching"],
                 "cannot go with --no-prefix-caching")]:
            done = subprocess.run([LLMRUN, "serve", bundle("llama"), "--port", "0", *args],
                                  capture_output=True, text=True, timeout=60)
            self.assertNotEqual(done.returncode, 0)
            self.assertIn(error, done.stderr)
        # An address already bound is refused too.
        taken = zmq.Context.instance().socket(zmq.PUB)
        port = taken.bind_to_random_port("tcp://127.0.0.1")
        try:
            done = subprocess.run([LLMRUN, "serve", bundle("llama"), "--port", "0",
                                   "--kv-events-endpoint", f"tcp://*:{port}"],
                                  capture_output=True, text=True, timeout=60)
            self.assertNotEqual(done.returncode, 0)
            self.assertIn(f"--kv-events-endpoint 'tcp://*:{port}': Address already in use", done.stderr)
        finally:
            taken.close(0)


if __name__ == "__main__":
    LLMRUN, WORK = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
