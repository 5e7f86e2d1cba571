#!/usr/bin/env python3
"""Checks that every text the converters' grammars produce is valid.

Runs grammar_sample (test/unit/grammar/grammar_sample.cpp), which walks each
grammar at random through the real matcher, then checks:
  - documents of each JSON schema in --schemas: json.loads, then jsonschema's
    Draft 2020-12 validator with format checks (those jsonschema leaves to
    optional packages, date-time, time and uri, written here from RFC 3339
    and RFC 3986);
  - texts of each pattern in --regexes: Python's re.fullmatch and, where node
    is installed, ECMAScript's RegExp (with the u flag: code points), since
    the converter promises both.
  - documents of --random-schemas N schemas made up from random keywords
    (fixed seed): these may be refused, but what converts must be valid.
Every schema and pattern of the corpus must convert, and every text must be
valid.

Usage: validate.py GRAMMAR_SAMPLE --schemas DIR [--regexes FILE]
                   [--random-schemas N] [--count N] [--seed S]
Exits 77 (skipped) without python3-jsonschema.
"""

import argparse
import datetime
import glob
import json
import os
import re
import random
import shutil
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    print("python3-jsonschema is not installed: skipped")
    sys.exit(77)

# RFC 3339 section 5.6.
_TIME = re.compile(r"(\d\d):(\d\d):(\d\d)(\.\d+)?([Zz]|[+-](\d\d):(\d\d))")
_DATE = re.compile(r"(\d{4})-(\d\d)-(\d\d)")


def _valid_time(text):
    m = _TIME.fullmatch(text)
    if not m:
        return False
    hour, minute, second = int(m[1]), int(m[2]), int(m[3])
    offset_ok = m[6] is None or (int(m[6]) <= 23 and int(m[7]) <= 59)
    return hour <= 23 and minute <= 59 and second <= 60 and offset_ok


def _valid_date(text):
    m = _DATE.fullmatch(text)
    if not m:
        return False
    try:
        datetime.date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return False
    return True


def _valid_date_time(text):
    parts = re.split("[Tt]", text)
    return len(parts) == 2 and _valid_date(parts[0]) and _valid_time(parts[1])


# RFC 3986 section 3, absolute URIs (no IP-literal hosts).
_PCHAR = r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-Fa-f]{2})"
_URI = re.compile(
    r"[A-Za-z][A-Za-z0-9+\-.]*:"
    r"(?://(?:(?:[A-Za-z0-9\-._~!$&'()*+,;=:]|%[0-9A-Fa-f]{2})*@)?"
    r"(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*(?::[0-9]*)?"
    rf"(?:/{_PCHAR}*)*"
    rf"|/(?:{_PCHAR}+(?:/{_PCHAR}*)*)?|{_PCHAR}+(?:/{_PCHAR}*)*|)"
    rf"(?:\?(?:{_PCHAR}|[/?])*)?(?:#(?:{_PCHAR}|[/?])*)?"
)


def format_checker():
    checker = jsonschema.FormatChecker(formats=())
    checker.checkers = dict(jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers)
    for name, check in (("date-time", _valid_date_time), ("time", _valid_time),
                        ("uri", lambda text: _URI.fullmatch(text) is not None)):
        checker.checks(name)(lambda text, check=check: not isinstance(text, str) or check(text))
    return checker


def run_sampler(sampler, args):
    result = subprocess.run([sampler] + args, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.exit(f"grammar_sample failed ({result.returncode}): {result.stderr}")
    return [json.loads(line) for line in result.stdout.split("\n") if line]


def collect(lines, sources, count, failures):
    """Texts by source; conversion errors and too few texts are failures."""
    texts = {source: [] for source in sources}
    for line in lines:
        source = line["source"]
        if "error" in line:
            failures.append(f"{source}: {line['error']}")
        elif "text" in line:
            texts[source].append(line["text"])
        elif line["texts"] < count // 2:
            failures.append(f"{source}: only {line['texts']} of {count} walks ended "
                            f"({line['abandoned']} ran too long)")
    return texts


def random_schema(rng, depth=0):
    """A schema of random keywords, often contradictory or unsupported."""
    types = ["string", "number", "integer", "boolean", "null", "object", "array"]
    numbers = [0, 1, -1, 2.5, -0.5, 0.1, 100, 7]

    def sub():
        return rng.choice([True, False, {}]) if depth > 2 else random_schema(rng, depth + 1)

    choices = [
        lambda: ("type", rng.choice(types)),
        lambda: ("type", rng.sample(types, 2)),
        lambda: ("properties", {"a": sub(), "b": sub(), "ab": sub(), 'q"': sub()}),
        lambda: ("required", rng.choice([["a"], ["a", "c"], ["b"]])),
        lambda: ("additionalProperties", sub()),
        lambda: ("items", sub()),
        lambda: ("prefixItems", [sub(), sub()]),
        lambda: ("minItems", rng.randint(0, 3)),
        lambda: ("maxItems", rng.randint(0, 3)),
        lambda: ("anyOf", [sub(), sub()]),
        lambda: ("oneOf", [sub(), sub()]),
        lambda: ("allOf", [sub(), sub()]),
        lambda: ("enum", rng.sample(numbers + ["x", None, [1], {"k": 1}, True], 3)),
        lambda: ("const", rng.choice(numbers + ["x", None, True])),
        lambda: ("minimum", rng.choice(numbers)),
        lambda: ("maximum", rng.choice(numbers)),
        lambda: ("exclusiveMinimum", rng.choice(numbers)),
        lambda: ("exclusiveMaximum", rng.choice(numbers)),
        lambda: ("minLength", rng.randint(0, 4)),
        lambda: ("maxLength", rng.randint(0, 8)),
        lambda: ("pattern", rng.choice(["^a+b?$", "[^x]{2,3}", "(a|b)*c", "\\d+\\.\\d*", '^["\\\\]+$'])),
        lambda: ("format", rng.choice(["date", "email", "uri", "uuid", "time", "date-time", "ipv4", "ipv6", "x"])),
        lambda: ("$ref", "#/$defs/n"),
        lambda: ("minProperties", rng.randint(0, 3)),
        lambda: ("maxProperties", rng.randint(0, 3)),
        lambda: ("multipleOf", 1),
    ]
    return dict(rng.choice(choices)() for _ in range(rng.randint(0, 4)))


def check_random_schemas(sampler, number, count, seed, failures):
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as directory:
        files = []
        for i in range(number):
            schema = random_schema(rng)
            schema["$defs"] = {"n": random_schema(rng, 2)}
            files.append(os.path.join(directory, f"random_{i:04d}.json"))
            with open(files[-1], "w", encoding="utf-8") as f:
                json.dump(schema, f)
        lines = run_sampler(sampler, ["schema", "--count", str(count), "--seed", str(seed)] + files)
        refused = [line for line in lines if "error" in line]
        for line in refused:
            if not line["error"].startswith("json schema: "):
                failures.append(f"random schema {line['source']}: {line['error']}")
        if len(refused) > number * 0.7:
            failures.append(f"{len(refused)} of {number} random schemas refused")
        return check_documents([line for line in lines if "error" not in line], files, count, failures)


def check_documents(lines, files, count, failures):
    checker = format_checker()
    validators = {}
    for path in files:
        with open(path, encoding="utf-8") as f:
            schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(schema)
        validators[path] = jsonschema.Draft202012Validator(schema, format_checker=checker)
    checked = 0
    for path, texts in collect(lines, files, count, failures).items():
        for text in texts:
            checked += 1
            try:
                document = json.loads(text)
            except ValueError as e:
                failures.append(f"{path}: not JSON ({e}): {text!r}")
                continue
            for error in validators[path].iter_errors(document):
                failures.append(f"{path}: {error.message} at {list(error.absolute_path)}: {text!r}")
    return checked


def check_schemas(sampler, directory, count, seed, failures):
    files = sorted(glob.glob(os.path.join(directory, "*.json")))
    if not files:
        failures.append(f"no schemas in {directory}")
        return 0
    lines = run_sampler(sampler, ["schema", "--count", str(count), "--seed", str(seed)] + files)
    return check_documents(lines, files, count, failures)


def check_regexes(sampler, path, count, seed, failures):
    with open(path, encoding="utf-8") as f:
        patterns = json.load(f)
    lines = run_sampler(sampler, ["regex", "--count", str(count), "--seed", str(seed), path])
    pairs = []
    for pattern, texts in collect(lines, patterns, count, failures).items():
        compiled = re.compile(pattern)
        for text in texts:
            pairs.append([pattern, text])
            if not compiled.fullmatch(text):
                failures.append(f"regex {pattern!r}: Python's re does not match {text!r}")
    node = shutil.which("node")
    if node and pairs:
        # With the u flag, as JSON Schema validators like ajv read patterns;
        # without it where that syntax is stricter (a lone "}") and so for
        # texts both readings match alike.
        script = ("const pairs = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
                  "for (const [p, t] of pairs) {"
                  "  let re; try { re = new RegExp('^(?:' + p + ')$', 'u'); }"
                  "  catch (e) { re = new RegExp('^(?:' + p + ')$'); }"
                  "  if (!re.test(t)) console.log(JSON.stringify([p, t])); }")
        result = subprocess.run([node, "-e", script], input=json.dumps(pairs), capture_output=True,
                                text=True, check=False)
        if result.returncode != 0:
            failures.append(f"node failed: {result.stderr}")
        for line in result.stdout.splitlines():
            pattern, text = json.loads(line)
            failures.append(f"regex {pattern!r}: ECMAScript's RegExp does not match {text!r}")
    return len(pairs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sampler")
    parser.add_argument("--schemas", required=True)
    parser.add_argument("--regexes")
    parser.add_argument("--random-schemas", type=int, default=0)
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    failures = []
    documents = check_schemas(args.sampler, args.schemas, args.count, args.seed, failures)
    texts = check_regexes(args.sampler, args.regexes, args.count, args.seed, failures) if args.regexes else 0
    random_documents = check_random_schemas(args.sampler, args.random_schemas, args.count, args.seed, failures)
    print(f"{documents} documents of {len(glob.glob(os.path.join(args.schemas, '*.json')))} schemas, "
          f"{texts} texts of patterns, {random_documents} documents of {args.random_schemas} random schemas; "
          f"{len(failures)} failures")
    for failure in failures[:50]:
        print("  " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
