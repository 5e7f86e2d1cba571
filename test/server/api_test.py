#!/usr/bin/python3
"""`llmrun serve` end to end over HTTP on the fixture bundles: greedy output
against the torch reference, batch invariance (concurrency, prefix caching,
preemption), cancelled streams, limits and errors, API key, graceful stop.

Usage: api_test.py <llmrun> <work-dir with the bundles of prepare_bundles.py>
"""

import concurrent.futures
import gzip
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
import unittest

import torch

from server_process import ServerProcess, stream_events

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "reference"))
import torch_reference  # noqa: E402

LLMRUN = WORK = None
MODELS = ("llama", "qwen2", "mistral", "gpt2")


def bundle(name):
    return os.path.join(WORK, name + ".llmb")


def reference(name):
    with open(os.path.join(WORK, "fixtures", name, "reference.json")) as f:
        return json.load(f)


def completion_text(server, body):
    status, _, response = server.post("/v1/completions", body)
    assert status == 200, response
    return response["choices"][0]["text"]


class GreedyMatchesReference(unittest.TestCase):
    def test_each_fixture_model(self):
        for name in MODELS:
            ref = reference(name)
            with ServerProcess(LLMRUN, bundle(name)) as server:
                status, _, expected = server.post(
                    "/detokenize", {"tokens": ref["greedy"]})
                self.assertEqual(status, 200)
                body = {"prompt": ref["prompt"], "max_tokens": len(ref["greedy"]),
                        "temperature": 0, "ignore_eos": True}
                self.assertEqual(completion_text(server, body), expected["prompt"], name)
                # The same through the stream.
                conn = server.connection()
                conn.request("POST", "/v1/completions", json.dumps({**body, "stream": True}))
                text = "".join(e["choices"][0]["text"]
                               for e in stream_events(conn.getresponse()))
                conn.close()
                self.assertEqual(text, expected["prompt"], name)
                self.assertEqual(server.stop(), 0)


def penalised_greedy(model, prompt, steps, presence, frequency, repetition, bias=None):
    """Greedy decoding under vLLM's penalties, then OpenAI's logit_bias
    ({token: bias}), from full-context reference logits: the tokens, the raw
    log-probs of each step, and each step's margin between the two best
    adjusted logits."""
    tokens, generated, raw_logprobs, margins = list(prompt), [], [], []
    for _ in range(steps):
        raw = torch_reference.logits(model, tokens)[-1]
        counts = torch.zeros_like(raw)
        for t in generated:
            counts[t] += 1
        seen = torch.zeros_like(raw, dtype=torch.bool)
        seen[torch.tensor(tokens)] = True
        x = torch.where(seen, torch.where(raw > 0, raw / repetition, raw * repetition), raw)
        x = x - frequency * counts - presence * (counts > 0).double()
        for token, b in (bias or {}).items():
            x[token] += b
        top = torch.topk(x, 2)
        margins.append(float(top.values[0] - top.values[1]))
        generated.append(int(top.indices[0]))
        raw_logprobs.append(torch.log_softmax(raw, 0))
        tokens.append(generated[-1])
    return generated, raw_logprobs, margins


class PenaltiesAndLogprobs(unittest.TestCase):
    """Greedy decoding with every penalty against the torch reference, and
    the log-probs the server reports against the reference's."""

    def test_logit_bias_against_the_reference(self):
        ref = reference("llama")
        model = torch_reference.load_model(os.path.join(WORK, "fixtures", "llama"))
        steps = 8
        # Ban the greedy first token, favour another.
        bias = {ref["greedy"][0]: -100.0, (ref["greedy"][0] + 7) % 64: 2.5}
        tokens, _, margins = penalised_greedy(model, ref["prompt"], steps, 0.0, 0.0, 1.0, bias)
        self.assertGreater(min(margins), 1e-3, "the reference continuation is not robust")
        self.assertNotEqual(tokens[0], ref["greedy"][0])
        body = {"prompt": ref["prompt"], "max_tokens": steps, "temperature": 0,
                "ignore_eos": True, "return_tokens_as_token_ids": True, "logprobs": 0,
                "logit_bias": {str(t): b for t, b in bias.items()}}
        with ServerProcess(LLMRUN, bundle("llama")) as server:
            status, _, response = server.post("/v1/completions", body)
            self.assertEqual(status, 200, response)
            got = response["choices"][0]["logprobs"]["tokens"]
            self.assertEqual(got, [f"token_id:{t}" for t in tokens])

    def test_llama_against_the_reference(self):
        ref = reference("llama")
        model = torch_reference.load_model(os.path.join(WORK, "fixtures", "llama"))
        steps, top = 12, 4
        penalties = {"presence_penalty": 0.6, "frequency_penalty": 0.4,
                     "repetition_penalty": 1.3}
        tokens, logprobs, margins = penalised_greedy(
            model, ref["prompt"], steps, penalties["presence_penalty"],
            penalties["frequency_penalty"], penalties["repetition_penalty"])
        self.assertGreater(min(margins), 1e-3, "the reference continuation is not robust")
        self.assertNotEqual(tokens, ref["greedy"][:steps], "the penalties change nothing")
        body = {"prompt": ref["prompt"], "max_tokens": steps, "temperature": 0,
                "ignore_eos": True, "logprobs": top, "return_tokens_as_token_ids": True,
                **penalties}
        with ServerProcess(LLMRUN, bundle("llama")) as server:
            status, _, response = server.post("/v1/completions", body)
            self.assertEqual(status, 200, response)
            got = response["choices"][0]["logprobs"]
            self.assertEqual(got["tokens"], [f"token_id:{t}" for t in tokens])
            for step, (token, lp) in enumerate(zip(tokens, logprobs)):
                self.assertAlmostEqual(got["token_logprobs"][step], float(lp[token]),
                                       delta=1e-4)
                # The top tokens (greedy: the sampled one is the first).
                values, indices = torch.topk(lp, top)
                want = {f"token_id:{i}": v for i, v in zip(indices.tolist(), values.tolist())}
                self.assertEqual(sorted(got["top_logprobs"][step]), sorted(want), step)
                for key, value in want.items():
                    self.assertAlmostEqual(got["top_logprobs"][step][key], value, delta=1e-4)

            # As text, each token's offset is where its text starts.
            body["return_tokens_as_token_ids"] = False
            status, _, response = server.post("/v1/completions", body)
            choice = response["choices"][0]
            offsets = [0]
            for text in choice["logprobs"]["tokens"]:
                offsets.append(offsets[-1] + len(text))
            self.assertEqual(choice["logprobs"]["text_offset"], offsets[:-1])

            # The stream carries the same log-probs, chunk by chunk.
            conn = server.connection()
            conn.request("POST", "/v1/completions", json.dumps({**body, "stream": True}))
            streamed = [lp for e in stream_events(conn.getresponse())
                        for lp in (e["choices"][0]["logprobs"] or {}).get("token_logprobs", [])]
            conn.close()
            self.assertEqual(streamed, got["token_logprobs"])
            self.assertEqual(server.stop(), 0)


def invariance_requests():
    """32 prompts of varied length, several sharing a prefix, greedy and
    seeded sampling."""
    rng = random.Random(7)
    shared = [rng.randrange(3, 260) for _ in range(40)]
    requests = []
    for i in range(32):
        tail = [rng.randrange(3, 260) for _ in range(rng.randrange(1, 30))]
        prompt = (shared[:rng.randrange(17, 40)] + tail) if i % 2 else tail + shared[:5]
        body = {"prompt": prompt, "max_tokens": 24, "ignore_eos": True}
        body.update({"temperature": 0} if i % 4 else {"temperature": 0.9, "seed": i})
        requests.append(body)
    return requests


class BatchInvariance(unittest.TestCase):
    def outputs(self, *args):
        requests = invariance_requests()
        with ServerProcess(LLMRUN, bundle("llama"), "--max-model-len", "128", *args) as server:
            alone = [completion_text(server, r) for r in requests]
            with concurrent.futures.ThreadPoolExecutor(len(requests)) as pool:
                together = list(pool.map(lambda r: completion_text(server, r), requests))
            metrics = server.wait_until_idle()
            self.assertEqual(server.stop(), 0)
        self.assertEqual(together, alone)
        return alone, metrics

    def test_concurrent_equals_one_at_a_time(self):
        cached, metrics = self.outputs()
        self.assertGreater(metrics["llmserve:prefix_cache_hits_total"], 0)
        # vLLM's names, which routers read, say the same.
        labels = 'model_name="llama",engine="0"'
        self.assertEqual(metrics[f"vllm:prefix_cache_hits_total{{{labels}}}"],
                         metrics["llmserve:prefix_cache_hits_total"])
        self.assertEqual(metrics[f"vllm:num_requests_running{{{labels}}}"], 0)
        self.assertEqual(metrics[f"vllm:time_to_first_token_seconds_count{{{labels}}}"],
                         metrics["llmserve:time_to_first_token_seconds_count"])
        self.assertIn(f'vllm:cache_config_info{{{labels},block_size="16",cache_dtype="f32",'
                      'num_gpu_blocks="',
                      " ".join(metrics))
        # The concurrent requests ran in back-to-back steps, whose executor
        # idle gaps the histogram holds; the engine's time adds up.
        self.assertGreater(metrics["llmserve:step_gap_seconds_count"], 0)
        self.assertGreater(metrics["llmserve:step_execute_seconds_total"], 0)
        self.assertGreater(metrics["llmserve:step_schedule_seconds_total"], 0)
        uncached, metrics = self.outputs("--no-prefix-caching")
        self.assertEqual(metrics["llmserve:prefix_cache_hits_total"], 0)
        self.assertIn('enable_prefix_caching="False"', " ".join(metrics))
        self.assertEqual(uncached, cached)
        # 8 blocks of 16 tokens, one request's worth at the 128-token limit,
        # for 32 requests of up to 90 tokens: any two long ones that overlap
        # preempt one of them, however the requests interleave.
        preempted, metrics = self.outputs("--kv-cache-memory", str(8 * 16 * 512))
        self.assertGreater(metrics["llmserve:num_preemptions_total"], 0)
        self.assertEqual(preempted, cached)


class Cancellation(unittest.TestCase):
    def test_cut_streams_free_their_blocks(self):
        with ServerProcess(LLMRUN, bundle("llama")) as server:
            def cut_stream(i):
                conn = server.connection()
                conn.request("POST", "/v1/completions", json.dumps(
                    {"prompt": f"stream {i} " * 5, "max_tokens": 200, "ignore_eos": True,
                     "stream": True}))
                response = conn.getresponse()
                events = 0
                for line in response:
                    events += line.startswith(b"data: ")
                    if events == 3:
                        break
                # Close the socket under the response, mid-stream.
                response.fp.raw._sock.shutdown(socket.SHUT_RDWR)
                conn.close()
                return events

            with concurrent.futures.ThreadPoolExecutor(50) as pool:
                self.assertEqual(list(pool.map(cut_stream, range(50))), [3] * 50)
            # The requests were aborted (but for any whose whole stream fit in
            # the socket buffers before a slow client thread cut it), and once
            # they are gone no block is held by a request: blocks only the
            # prefix cache keeps count as free.
            metrics = server.wait_until_idle(finished=50)
            aborted = metrics['llmserve:request_success_total{finished_reason="abort"}']
            finished = metrics['llmserve:request_success_total{finished_reason="length"}']
            self.assertEqual(aborted + finished, 50)
            self.assertGreaterEqual(aborted, 45)
            self.assertEqual(metrics["llmserve:kv_cache_usage_perc"], 0)
            self.assertTrue(completion_text(server, {"prompt": "still serving", "max_tokens": 4,
                                                     "ignore_eos": True}))
            self.assertEqual(server.stop(), 0)


    def test_gone_clients_of_unstreamed_requests_are_aborted(self):
        # One request runs at a time, and each client hangs up as soon as its
        # request is sent: all but the first few are still waiting.
        with ServerProcess(LLMRUN, bundle("llama"), "--max-num-seqs", "1") as server:
            for i in range(16):
                conn = server.connection()
                conn.request("POST", "/v1/completions", json.dumps(
                    {"prompt": f"request {i}", "max_tokens": 240, "ignore_eos": True}))
                conn.close()
            metrics = server.wait_until_idle(finished=16)
            aborted = metrics['llmserve:request_success_total{finished_reason="abort"}']
            finished = metrics['llmserve:request_success_total{finished_reason="length"}']
            self.assertEqual(aborted + finished, 16)
            self.assertGreaterEqual(aborted, 12)
            self.assertIn('"POST /v1/completions HTTP/1.1" 499', server.output())
            self.assertEqual(server.stop(), 0)


class Errors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(LLMRUN, bundle("llama"), "--max-model-len", "64")

    @classmethod
    def tearDownClass(cls):
        status = cls.server.stop()
        cls.server.__exit__()
        assert status == 0, status

    def check(self, path, body, status, param=None, code=None, text=None):
        got, headers, response = self.server.post(path, body)
        self.assertEqual(got, status, response)
        self.assertEqual(headers.get("Content-Type"), "application/json")
        error = response["error"]
        self.assertEqual(sorted(error), ["code", "message", "param", "type"])
        self.assertIsInstance(error["message"], str)
        if param is not None:
            self.assertEqual(error["param"], param, error)
        if code is not None:
            self.assertEqual(error["code"], code, error)
        if text is not None:
            self.assertIn(text, error["message"])
        return error

    def test_malformed_bodies(self):
        self.check("/v1/completions", "{not json", 400, text="not valid JSON")
        self.check("/v1/completions", "[1, 2]", 400, text="JSON object")
        self.check("/v1/chat/completions", "", 400)

    def test_wrong_types(self):
        for field, value in [("temperature", "hot"), ("max_tokens", "5"), ("stream", "yes"),
                             ("n", 1.5), ("stop", 3), ("seed", "x"), ("top_k", 0.5),
                             ("stop_token_ids", 2), ("echo", 1), ("stream_options", True),
                             ("model", 7)]:
            self.check("/v1/completions", {"prompt": "hi", field: value}, 400, param=field)
        self.check("/v1/completions", {"prompt": {"text": "hi"}}, 400, param="prompt")
        self.check("/v1/completions", {"prompt": [1, "a"]}, 400, param="prompt")
        self.check("/v1/completions", {"prompt": []}, 400, param="prompt")
        self.check("/v1/completions", {}, 400, param="prompt")
        self.check("/v1/chat/completions", {"messages": "hi"}, 400, param="messages")
        self.check("/v1/chat/completions", {"messages": [{"content": "hi"}]}, 400,
                   param="messages[0].role")
        self.check("/v1/chat/completions",
                   {"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, 400,
                   param="messages[0].content")
        self.check("/tokenize", {"prompt": 5}, 400, param="prompt")
        self.check("/detokenize", {"tokens": ["a"]}, 400, param="tokens")

    def test_out_of_range(self):
        self.check("/v1/completions", {"prompt": "hi", "max_tokens": 0}, 400, param="max_tokens")
        self.check("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}],
                                            "max_completion_tokens": -2}, 400,
                   param="max_completion_tokens")
        self.check("/v1/completions", {"prompt": "hi", "n": 0}, 400, param="n")
        self.check("/v1/completions", {"prompt": "hi", "temperature": -1}, 400,
                   text="temperature")
        self.check("/v1/completions", {"prompt": "hi", "top_p": 0}, 400, text="top_p")
        self.check("/v1/completions", {"prompt": [5, 300]}, 400, param="prompt",
                   text="outside the vocabulary")
        self.check("/detokenize", {"tokens": [-1]}, 400, param="tokens")

    def test_prompt_longer_than_the_model(self):
        self.check("/v1/completions", {"prompt": [5] * 64}, 400, param="prompt",
                   text="maximum context length is 64")
        self.check("/v1/completions", {"prompt": "word " * 200}, 400, param="prompt")
        self.check("/v1/chat/completions",
                   {"messages": [{"role": "user", "content": "word " * 200}]}, 400,
                   param="messages")
        self.check("/v1/completions", {"prompt": [5] * 60, "max_tokens": 5}, 400,
                   param="max_tokens")

    def test_penalty_and_logprob_limits(self):
        for field, value in [("presence_penalty", 2.5), ("frequency_penalty", -3),
                             ("repetition_penalty", 0), ("logprobs", 21)]:
            self.check("/v1/completions", {"prompt": "hi", field: value}, 400, text=field)
        self.check("/v1/completions", {"prompt": "hi", "logprobs": 2, "echo": True}, 400,
                   param="logprobs")
        self.check("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}],
                                            "top_logprobs": 2}, 400, param="top_logprobs")

    def test_unknown_model_and_route(self):
        self.check("/v1/completions", {"prompt": "hi", "model": "gpt-4"}, 404, param="model",
                   code="model_not_found")
        status, _, response = self.server.request("GET", "/v1/nothing")
        self.assertEqual(status, 404)
        self.assertIn("error", response)

    def test_oversized_body(self):
        conn = self.server.connection()
        body = b'{"prompt": "' + b"x" * (17 << 20) + b'"}'
        try:
            conn.request("POST", "/v1/completions", body=body)
            response = conn.getresponse()
            self.assertEqual(response.status, 413)
            self.assertIn("larger than the limit", json.loads(response.read())["error"]["message"])
        except (BrokenPipeError, ConnectionResetError):
            self.fail("the server reset the connection instead of answering 413")
        finally:
            conn.close()

    def test_chunked_and_compressed_bodies(self):
        # The limit holds for the bytes of a chunked body as they arrive.
        def chunks():
            yield b'{"prompt": "'
            for _ in range(18):
                yield b"x" * (1 << 20)
            yield b'"}'
        for path in ("/v1/completions", "/tokenize"):
            conn = self.server.connection()
            try:
                conn.request("POST", path, body=chunks(), encode_chunked=True,
                             headers={"Transfer-Encoding": "chunked"})
                response = conn.getresponse()
                self.assertEqual(response.status, 413, path)
                self.assertIn("larger than the limit", json.loads(response.read())["error"]["message"])
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server may stop reading once it has answered
            finally:
                conn.close()
        # A small chunked body is read whole.
        conn = self.server.connection()
        conn.request("POST", "/tokenize", body=iter([b'{"prompt": ', b'"hello"}']),
                     encode_chunked=True, headers={"Transfer-Encoding": "chunked"})
        response = conn.getresponse()
        self.assertEqual(response.status, 200)
        conn.close()
        # A compressed body could inflate past any limit: refused unread.
        gzipped = gzip.compress(b'{"prompt": "' + b"x" * (1 << 24) + b'"}')
        status, _, response = self.server.post("/tokenize", gzipped,
                                               headers={"Content-Encoding": "gzip"})
        self.assertEqual(status, 415, response)
        self.assertIn("Content-Encoding 'gzip' is not accepted", response["error"]["message"])
        status, _, _ = self.server.post("/tokenize", b'{"prompt": "a"}',
                                        headers={"Content-Encoding": "identity"})
        self.assertEqual(status, 200)

    def test_tokenize_agrees_with_generation(self):
        status, _, tokens = self.server.post("/tokenize", {"prompt": "hello there",
                                                           "add_special_tokens": False})
        self.assertEqual(status, 200, tokens)
        self.assertEqual(tokens["count"], len(tokens["tokens"]))
        self.assertEqual(tokens["max_model_len"], 64)
        status, _, text = self.server.post("/detokenize", {"tokens": tokens["tokens"]})
        self.assertEqual(text, {"prompt": "hello there"})
        messages = [{"role": "user", "content": "hello there"}]
        status, _, chat = self.server.post("/tokenize", {"messages": messages})
        status, _, response = self.server.post("/v1/chat/completions",
                                               {"messages": messages, "max_tokens": 1})
        self.assertEqual(response["usage"]["prompt_tokens"], chat["count"])

    def test_fields_not_acted_on_are_refused_by_name(self):
        chat = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
        # A field the API does not have, as OpenAI answers it.
        self.check("/v1/completions", {"prompt": "hi", "whatever": [1]}, 400, param="whatever",
                   text="Unrecognized request argument supplied: whatever")
        # Fields of the API this server does not implement, asking for something.
        for body, param in (({"best_of": 3}, "best_of"), ({"suffix": "!"}, "suffix"),
                            ({"logit_bias": {"5": 101}}, "logit_bias"),
                            ({"logit_bias": {"x": 1}}, "logit_bias")):
            self.check("/v1/completions", dict({"prompt": "hi"}, **body), 400, param=param)
        for body, param in (({"response_format": {"type": "xml"}}, "response_format.type"),
                            ({"tools": [{"type": "function",
                                         "function": {"name": "f g"}}]}, "tools[0].function.name"),
                            ({"tool_choice": "required"}, "tool_choice"),
                            ({"functions": [{"name": "f"}]}, "functions"),
                            ({"reasoning_effort": "low"}, "reasoning_effort")):
            self.check("/v1/chat/completions", dict(chat, **body), 400, param=param)
        self.check("/v1/chat/completions",
                   {"messages": [{"role": "assistant", "content": "",
                                  "tool_calls": [{"id": "c", "type": "function"}]}]},
                   400, param="messages[0].tool_calls[0]")
        # Hints, and the values that ask for nothing, are accepted.
        for body in ({"user": "u", "metadata": {"k": "v"}, "store": False},
                     {"logit_bias": {}, "best_of": 2, "n": 2, "suffix": None}):
            status, _, response = self.server.post(
                "/v1/completions", dict({"prompt": "hi", "max_tokens": 2}, **body))
            self.assertEqual(status, 200, response)
        status, _, response = self.server.post("/v1/chat/completions", dict(
            chat, response_format={"type": "text"}, tools=[], tool_choice="none",
            parallel_tool_calls=True, messages=[
                {"role": "user", "content": "hi", "name": "me"},
                {"role": "assistant", "content": "yes", "refusal": None, "tool_calls": []},
                {"role": "user", "content": "so"}]))
        self.assertEqual(status, 200, response)
        status, _, _ = self.server.request("GET", "/health")
        self.assertEqual(status, 200)


class Limits(unittest.TestCase):
    @unittest.skipIf(os.environ.get("LLMSERVE_SANITIZE"),
                     "a sanitizer's allocator holds freed memory back (ASan's quarantine)")
    def test_memory_goes_back_after_a_burst_of_large_bodies(self):
        def resident(pid):
            with open(f"/proc/{pid}/status") as f:
                return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1)) << 10

        body = json.dumps({"prompt": "and the " * (1 << 19)}).encode()  # 4 MiB

        def tokenize(_):
            conn = server.connection()
            conn.request("POST", "/tokenize", body=body)
            response = conn.getresponse()
            response.read()
            conn.close()
            return response.status

        with ServerProcess(LLMRUN, bundle("llama")) as server:
            before = resident(server.process.pid)
            with concurrent.futures.ThreadPoolExecutor(16) as pool:
                self.assertEqual(set(pool.map(tokenize, range(32))), {200})
            # Each request held several times its 4 MiB at once; within
            # seconds after, the server is back near where it started.
            deadline = time.time() + 5
            while resident(server.process.pid) >= before + (96 << 20) and time.time() < deadline:
                time.sleep(0.1)
            self.assertLess(resident(server.process.pid), before + (96 << 20))

    def test_queue_limit_answers_503_with_retry_after(self):
        with ServerProcess(LLMRUN, bundle("llama"), "--max-num-seqs", "1",
                           "--max-queued-requests", "1") as server:
            def fill():
                streams = []
                for _ in range(2):  # one running, one queued
                    conn = server.connection()
                    conn.request("POST", "/v1/completions", json.dumps(
                        {"prompt": "hi", "max_tokens": 250, "ignore_eos": True,
                         "stream": True}))
                    response = conn.getresponse()
                    self.assertEqual(response.status, 200)
                    streams.append((conn, response))
                return streams

            def drain(streams):
                for conn, response in streams:
                    stream_events(response)
                    conn.close()

            # A client descheduled for as long as the two streams take may
            # find them finished; the limit must show on one of three tries.
            for _ in range(3):
                streams = fill()
                status, headers, response = server.post("/v1/completions", {"prompt": "hi"})
                if status == 503:
                    break
                drain(streams)
            self.assertEqual(status, 503, response)
            self.assertEqual(headers.get("Retry-After"), "1")
            self.assertIn("retry later", response["error"]["message"])
            status, _, response = server.post("/v1/completions", {"prompt": "hi", "n": 3})
            self.assertEqual(status, 400, response)
            self.assertIn("at most 2", response["error"]["message"])
            drain(streams)
            self.assertTrue(completion_text(server, {"prompt": "hi", "max_tokens": 1,
                                                     "ignore_eos": True}))
            self.assertEqual(server.stop(), 0)

    def test_api_key(self):
        key_file = os.path.join(WORK, "api_key")
        with open(key_file, "w") as f:
            f.write("from-file\n")
        for args, env, key in ((("--api-key", "sekret"), None, "sekret"),
                               (("--api-key-file", key_file), None, "from-file"),
                               ((), {"LLMSERVE_API_KEY": "from-env"}, "from-env")):
            with ServerProcess(LLMRUN, bundle("llama"), *args, env=env) as server:
                for method, path, body in (("GET", "/v1/models", None),
                                           ("POST", "/tokenize", {"prompt": "hi"}),
                                           ("POST", "/detokenize", {"tokens": [5]})):
                    for headers in ({}, {"Authorization": "Bearer wrong"},
                                    {"Authorization": key},
                                    {"Authorization": "Bearer " + key + "x"}):
                        status, _, response = server.request(method, path, body,
                                                             headers=headers)
                        self.assertEqual(status, 401, (path, headers))
                        self.assertEqual(response["error"]["code"], "invalid_api_key")
                    status, _, response = server.request(
                        method, path, body, headers={"Authorization": "Bearer " + key})
                    self.assertEqual(status, 200, (path, response))
                # Probes and scrapes need no key.
                self.assertEqual(server.request("GET", "/health")[0], 200)
                self.assertEqual(server.request("GET", "/metrics")[0], 200)
                self.assertEqual(server.stop(), 0)

    def test_loopback_server_answers_requests_for_localhost_only(self):
        # A web page's request reaching a loopback server through DNS
        # rebinding names the page's host.
        with ServerProcess(LLMRUN, bundle("llama")) as server:
            for headers in ({"Host": "evil.example"}, {"Host": "evil.example:8000"},
                            {"Host": "localhost.evil.example"},
                            {"Origin": "http://evil.example"}, {"Origin": "null"}):
                status, _, response = server.request("GET", "/health", headers=headers)
                self.assertEqual(status, 403, headers)
                self.assertEqual(response["error"]["code"], "forbidden_host")
            for headers in ({"Host": "localhost:1234"}, {"Host": "127.0.0.1"},
                            {"Host": "[::1]:80"}, {"Origin": "http://localhost:3000"},
                            {"Origin": "https://127.0.0.1"}):
                self.assertEqual(server.request("GET", "/health", headers=headers)[0], 200,
                                 headers)
            self.assertEqual(server.stop(), 0)


class GracefulStop(unittest.TestCase):
    def open_streams(self, server, count):
        streams = []
        for _ in range(count):
            conn = server.connection()
            conn.request("POST", "/v1/completions", json.dumps(
                {"prompt": "hi", "max_tokens": 250, "ignore_eos": True, "stream": True}))
            streams.append((conn, conn.getresponse()))
        return streams

    def finish_reasons(self, streams):
        reasons = []
        for conn, response in streams:
            reasons.append(stream_events(response)[-1]["choices"][0]["finish_reason"])
            conn.close()
        return reasons

    def test_requests_in_flight_finish_within_the_grace(self):
        # One request runs at a time, so most of these are still waiting
        # when the signal comes; all finish, while /ready and new requests
        # get 503 and /health (liveness) stays 200.
        with ServerProcess(LLMRUN, bundle("llama"), "--max-num-seqs", "1") as server:
            self.assertEqual(server.request("GET", "/ready")[0], 200)
            streams = self.open_streams(server, 32)
            server.process.send_signal(signal.SIGTERM)
            deadline = time.time() + 10
            while server.request("GET", "/ready")[0] != 503:
                self.assertLess(time.time(), deadline, "/ready never turned 503")
                time.sleep(0.01)
            self.assertEqual(server.request("GET", "/health")[0], 200)
            status, headers, _ = server.post("/v1/completions", {"prompt": "hi", "max_tokens": 2})
            self.assertEqual(status, 503)
            self.assertEqual(headers.get("Retry-After"), "1")
            self.assertEqual(self.finish_reasons(streams), ["length"] * 32)
            self.assertEqual(server.stop(), 0)
            self.assertIn("stopping; requests in flight have 30 s to finish", server.output())

    def test_signal_aborts_what_the_grace_leaves_and_exits_zero(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            with ServerProcess(LLMRUN, bundle("llama"), "--max-num-seqs", "1",
                               "--shutdown-grace", "0") as server:
                streams = self.open_streams(server, 8)
                server.process.send_signal(sig)
                reasons = self.finish_reasons(streams)
                self.assertIn("abort", reasons)
                self.assertTrue(set(reasons) <= {"abort", "length"}, reasons)
                self.assertEqual(server.stop(sig), 0)
                self.assertIn("stopping", server.output())
                with self.assertRaises(OSError):
                    socket.create_connection((server.host, server.port), timeout=5).close()


class ServeCommand(unittest.TestCase):
    def serve(self, *args):
        return subprocess.run([LLMRUN, "serve", *args], capture_output=True, timeout=60)

    def test_start_up_errors(self):
        result = self.serve(bundle("llama"), "--port", "http")
        self.assertEqual(result.returncode, 2)
        self.assertIn(b"--port 'http': not an integer", result.stderr)
        result = self.serve(bundle("llama"), "--max-model-len", "100000")
        self.assertEqual(result.returncode, 1)
        self.assertIn(b"exceeds the model's max_position_embeddings = 256", result.stderr)
        result = self.serve(bundle("llama"), "--kv-cache-memory", "1KiB")
        self.assertEqual(result.returncode, 1)
        self.assertIn(b"KV cache budget of 1024 bytes holds no block", result.stderr)
        result = self.serve(bundle("llama"), "--gpu-memory-utilization", "0.9")
        self.assertEqual(result.returncode, 1)
        self.assertIn(b"--gpu-memory-utilization sizes the KV cache on a GPU", result.stderr)
        result = self.serve(os.path.join(WORK, "missing.llmb"))
        self.assertEqual(result.returncode, 1)
        self.assertIn(b"missing.llmb", result.stderr)
        result = self.serve(bundle("llama"), "--api-key", "k", "--api-key-file", "f")
        self.assertEqual(result.returncode, 2)
        self.assertIn(b"--api-key excludes --api-key-file", result.stderr)
        result = self.serve(bundle("llama"), "--api-key-file", os.path.join(WORK, "no-key"))
        self.assertEqual(result.returncode, 1)
        self.assertIn(b"cannot read --api-key-file", result.stderr)
        with ServerProcess(LLMRUN, bundle("llama")) as server:
            result = self.serve(bundle("llama"), "--port", str(server.port), "--threads", "1")
            self.assertEqual(result.returncode, 1)
            self.assertIn(f"cannot listen on 127.0.0.1:{server.port}".encode(), result.stderr)
            self.assertEqual(server.stop(), 0)

    def test_start_up_report(self):
        with ServerProcess(LLMRUN, bundle("llama"), "--kv-cache-memory", "1MiB") as server:
            self.assertEqual(server.stop(), 0)
            out = server.output()
        self.assertIn("model llama: llama, 112,448 parameters, vocabulary 300", out)
        # 1 MiB at 512 bytes per token: 2048 tokens in 128 blocks, 8 of 256.
        self.assertIn("KV cache (f32): 128 blocks of 16 tokens (2,048 tokens", out)
        self.assertIn("at most 8.0 full-length requests at once", out)

    def test_fp8_kv_cache_holds_four_times_the_tokens(self):
        with ServerProcess(LLMRUN, bundle("llama-fp8kv"), "--kv-cache-memory", "1MiB") as server:
            status, _, body = server.post("/v1/completions", {
                "model": "llama-fp8kv", "prompt": "Once upon a time", "max_tokens": 8,
                "temperature": 0, "ignore_eos": True})
            self.assertEqual(status, 200, body)
            self.assertEqual(body["usage"]["completion_tokens"], 8)
            metrics = server.metrics()
            self.assertEqual(server.stop(), 0)
            out = server.output()
        # A byte per element where f32 takes four: 128 bytes per token.
        self.assertIn("KV cache (f8_e4m3): 512 blocks of 16 tokens (8,192 tokens", out)
        self.assertEqual(metrics["llmserve:kv_cache_capacity_tokens"], 8192)
        self.assertIn('block_size="16",cache_dtype="f8_e4m3",num_gpu_blocks="512"',
                      " ".join(metrics))


class GenerateCommand(unittest.TestCase):
    def generate(self, *args):
        return subprocess.run([LLMRUN, "generate", *args], capture_output=True, timeout=120)

    def test_prints_what_the_server_returns(self):
        prompt = "Once upon a time"
        with ServerProcess(LLMRUN, bundle("mistral")) as server:
            expected = completion_text(server, {"prompt": prompt, "max_tokens": 12,
                                                "temperature": 0, "ignore_eos": True})
            self.assertEqual(server.stop(), 0)
        result = self.generate(bundle("mistral"), "--prompt", prompt, "--max-tokens", "12",
                               "--ignore-eos", "--threads", "1")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.decode("utf-8", "replace"), expected + "\n")
        self.assertIn(b"12 generated", result.stderr)
        # A stop string of two printable characters after the first one.
        stop = re.search(r"[!-~]{2}", expected[1:]).group(0)
        result = self.generate(bundle("mistral"), "--prompt", prompt, "--max-tokens", "12",
                               "--ignore-eos", "--stop", stop)
        self.assertEqual(result.stdout.decode("utf-8", "replace"),
                         expected[:expected.index(stop)] + "\n")
        self.assertIn(b"finish reason stop", result.stderr)

    def test_errors(self):
        result = self.generate(bundle("llama"))
        self.assertEqual(result.returncode, 2)
        self.assertIn(b"--prompt is required", result.stderr)
        result = self.generate(os.path.join(WORK, "missing.llmb"), "--prompt", "hi")
        self.assertEqual(result.returncode, 1)
        self.assertIn(b"missing.llmb", result.stderr)
        result = self.generate(bundle("llama"), "--prompt", "hi", "--max-tokens", "0")
        self.assertEqual(result.returncode, 2)
        self.assertIn(b"--max-tokens '0': must be in [1, 2147483647]", result.stderr)
        result = self.generate(bundle("gpt2"), "--prompt", "hi", "--chat")
        self.assertEqual(result.returncode, 1)
        self.assertIn(b"no chat template", result.stderr)


if __name__ == "__main__":
    LLMRUN, WORK = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1] + sys.argv[3:], verbosity=2)
