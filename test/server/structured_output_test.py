#!/usr/bin/env python3
"""Structured output end to end, on the shipped model, which knows nothing of
JSON: the grammar alone makes its output valid.

- Every schema of test/fixtures/json_schemas at temperature 1: each output
  that finishes parses and validates (Draft 2020-12, formats checked); the
  outputs cut by the model's 256-token context are counted.
- regex, choice and GBNF outputs match in full; a streamed output is the
  non-streamed one.
- A request's greedy output is the same alone and beside requests with other
  grammars or none in the same steps.
- Bad structured-output requests are 400s naming the field.

Usage: structured_output_test.py LLMRUN SHIPPED_BUNDLE
"""

import concurrent.futures
import glob
import json
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "grammar"))
sys.path.insert(0, HERE)

from server_process import ServerProcess  # noqa: E402

try:
    import jsonschema
    import validate  # test/grammar/validate.py: the format checks
except ImportError:
    print("python3-jsonschema is not installed: skipped")
    sys.exit(77)

LLMRUN = BUNDLE = None
SCHEMAS = sorted(glob.glob(os.path.join(ROOT, "test", "fixtures", "json_schemas", "*.json")))

server = None


def chat(body):
    status, _, response = server.post("/v1/chat/completions", {
        "messages": [{"role": "user", "content": "Fill in the form."}], **body})
    return status, response


def completion(body):
    return server.post("/v1/completions", {"prompt": "And it came to pass", **body})[::2]


def schema_format(schema):
    return {"type": "json_schema", "json_schema": {"name": "form", "schema": schema,
                                                   "strict": True}}


class Corpus(unittest.TestCase):
    def test_every_finished_output_validates(self):
        checker = validate.format_checker()

        def ask(index, path):
            with open(path, encoding="utf-8") as f:
                text = f.read()
            # The schema as written: properties keep their order.
            body = ('{"messages": [{"role": "user", "content": "Fill in the form."}], '
                    f'"temperature": 1, "seed": {index}, "response_format": {{"type": '
                    f'"json_schema", "json_schema": {{"name": "form", "schema": {text}}}}}}}')
            status, _, response = server.post("/v1/chat/completions", body.encode("utf-8"))
            return path, json.loads(text), status, response

        counts = {"valid": 0, "cut": 0}
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            results = list(pool.map(ask, range(len(SCHEMAS)), SCHEMAS))
        for path, schema, status, response in results:
            name = os.path.basename(path)
            self.assertEqual(status, 200, f"{name}: {response}")
            choice = response["choices"][0]
            if choice["finish_reason"] == "length":
                counts["cut"] += 1
                continue
            self.assertEqual(choice["finish_reason"], "stop", name)
            document = json.loads(choice["message"]["content"])
            jsonschema.Draft202012Validator(schema, format_checker=checker).validate(document)
            counts["valid"] += 1
        print(f"{len(SCHEMAS)} schemas at temperature 1: {counts['valid']} outputs finished and "
              f"validate, {counts['cut']} cut by the 256-token context", file=sys.stderr)
        self.assertGreater(counts["valid"], len(SCHEMAS) // 4)


class Grammars(unittest.TestCase):
    def test_regex_choice_and_gbnf_outputs_match_in_full(self):
        cases = [
            ({"regex": r"[A-Z][a-z]{1,12} [0-9]{2,4}(, [a-z]{1,12})?"},
             lambda text: re.fullmatch(r"[A-Z][a-z]{1,12} [0-9]{2,4}(, [a-z]{1,12})?", text)),
            ({"choice": ["yea", "nay", "it is written"]},
             lambda text: text in ("yea", "nay", "it is written")),
            ({"grammar": 'root ::= "(" [a-z]{1,12} (" " [a-z]{1,12}){0,5} ")"'},
             lambda text: re.fullmatch(r"\([a-z]{1,12}( [a-z]{1,12}){0,5}\)", text)),
        ]
        for outputs, matches in cases:
            for seed in range(4):
                status, response = completion({"structured_outputs": outputs, "temperature": 1,
                                               "seed": seed, "max_tokens": 100})
                self.assertEqual(status, 200, response)
                choice = response["choices"][0]
                self.assertEqual(choice["finish_reason"], "stop", choice)
                self.assertTrue(matches(choice["text"]), f"{outputs}: {choice['text']!r}")

    def test_a_stream_carries_the_same_output(self):
        body = {"response_format": {"type": "json_object"}, "temperature": 0, "max_tokens": 40}
        status, response = chat(body)
        self.assertEqual(status, 200, response)
        conn = server.connection()
        conn.request("POST", "/v1/chat/completions", json.dumps({
            "messages": [{"role": "user", "content": "Fill in the form."}], "stream": True,
            **body}), {"Content-Type": "application/json"})
        text = ""
        for line in conn.getresponse().read().decode().split("\n"):
            if line.startswith("data: {"):
                for choice in json.loads(line[6:])["choices"]:
                    text += choice["delta"].get("content") or ""
        self.assertEqual(text, response["choices"][0]["message"]["content"])
        self.assertTrue(text.startswith("{"))

    def test_greedy_output_is_the_same_alone_and_in_a_batch(self):
        requests = [
            {"response_format": schema_format({"type": "object", "properties": {
                "verse": {"type": "string", "maxLength": 30},
                "chapter": {"type": "integer", "minimum": 1}}, "required": ["verse", "chapter"],
                "additionalProperties": False})},
            {"structured_outputs": {"regex": "[a-z ]{5,40}\\."}},
            {},
            {"structured_outputs": {"choice": ["Genesis", "Exodus"]}},
        ]
        bodies = [{**r, "temperature": 0, "max_tokens": 60} for r in requests]
        alone = [chat(body) for body in bodies]
        with concurrent.futures.ThreadPoolExecutor(len(bodies) * 3) as pool:
            together = list(pool.map(chat, bodies * 3))
        for i, (status, response) in enumerate(together):
            self.assertEqual(status, 200, response)
            self.assertEqual(response["choices"][0], alone[i % len(bodies)][1]["choices"][0], i)


class Errors(unittest.TestCase):
    def test_bad_requests_name_the_field(self):
        cases = [
            ({"response_format": schema_format({"type": "object", "not": {}})},
             "response_format.json_schema.schema", "unsupported keyword 'not'"),
            ({"response_format": {"type": "json_schema"}}, "response_format.json_schema", None),
            ({"structured_outputs": {"regex": "(?<=a)b"}}, "structured_outputs.regex", None),
            ({"structured_outputs": {"grammar": "root ::= [a-"}}, "structured_outputs.grammar",
             None),
            ({"structured_outputs": {"choice": "yes"}}, "structured_outputs.choice", None),
            ({"structured_outputs": {"json": {"type": "string"}, "regex": "a"}},
             "structured_outputs", None),
        ]
        for body, param, text in cases:
            status, response = chat({**body, "max_tokens": 5})
            self.assertEqual(status, 400, f"{body}: {response}")
            self.assertEqual(response["error"]["param"], param, response)
            if text:
                self.assertIn(text, response["error"]["message"])


def main():
    global LLMRUN, BUNDLE, server
    LLMRUN, BUNDLE = sys.argv[1:3]
    with ServerProcess(LLMRUN, BUNDLE) as running:
        server = running
        program = unittest.main(argv=sys.argv[:1] + sys.argv[3:], exit=False, verbosity=2)
    sys.exit(0 if program.result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
