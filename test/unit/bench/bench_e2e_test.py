#!/usr/bin/python3
"""End to end: `llmrun bench offline` and `llmrun bench serve` against a real
bundle (the tiny random Llama fixture, imported and compiled with llmc) and a
real `llmrun serve`. Checks what the benchmark must get right whatever the
speed: every request completes, prompts have exactly the drawn token counts as
the server counts them, outputs have the requested lengths (ignore_eos), the
baseline and the speed-up are in the result file, and the plot is drawn.

Usage: bench_e2e_test.py <build-dir> <work-dir>
"""
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def run(*args, expect_failure=False):
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if (done.returncode != 0) != expect_failure:
        sys.exit("%s exited with %d\n%s%s" % (" ".join(args), done.returncode,
                                               done.stdout, done.stderr))
    return done


def check(condition, message):
    if not condition:
        sys.exit("FAIL: " + message)


def check_run(run_json, num_prompts, output_tokens, what):
    summary = run_json["summary"]
    check(summary["completed"] == num_prompts and summary["failed"] == 0,
          "%s: %s" % (what, json.dumps(summary["errors"])))
    check(summary["total_output_tokens"] == output_tokens,
          "%s: %d output tokens, requested %d" %
          (what, summary["total_output_tokens"], output_tokens))
    for r in run_json["requests"]:
        check(0 < r["ttft_s"] <= r["latency_s"], "%s: TTFT %s" % (what, r))
        check(len(r["itl_s"]) <= r["output_len"] - 1, "%s: ITLs %s" % (what, r))


def main():
    build, work = sys.argv[1], sys.argv[2]
    bin_dir = os.path.join(build, "bin")
    llmrun = os.path.join(bin_dir, "llmrun")
    os.makedirs(work, exist_ok=True)
    fixtures = os.path.join(work, "fixtures")
    run("/usr/bin/python3", os.path.join(ROOT, "test", "fixtures", "make_fixtures.py"),
        fixtures, "--only", "llama")
    mlir, bundle = os.path.join(work, "llama.mlir"), os.path.join(work, "llama.llmb")
    run(os.path.join(bin_dir, "llmc"), "import", os.path.join(fixtures, "llama"), "-o", mlir)
    run(os.path.join(bin_dir, "llmc"), "compile", mlir, "-o", bundle)

    # Offline: 12 prompts of 20-60 tokens, 4-12 output tokens each.
    result, plot = os.path.join(work, "offline.json"), os.path.join(work, "offline.svg")
    run(llmrun, "bench", "offline", bundle, "--num-prompts", "12",
        "--random-input-len", "20:60", "--random-output-len", "4:12",
        "--kv-cache-gb", "0.05", "--threads", "1", "--baseline", "sequential",
        "--plot", plot, "--concurrencies", "1,4", "--result-file", result)
    offline = json.load(open(result))
    requested = offline["workload"]["requested_output_tokens"]
    check([r["max_concurrency"] for r in offline["runs"]] == [1, 4], "sweep concurrencies")
    for r in offline["runs"]:
        check_run(r, 12, requested, "offline")
    check_run(offline["baseline"], 12, requested, "sequential baseline")
    # Where the engine's steps went: at least one step per output token of
    # the sequential run, each timed, and the executor's idle share between
    # back-to-back steps a percentage.
    baseline = offline["baseline"]
    check(baseline["Engine steps"] >= requested, "steps: %s" % baseline["Engine steps"])
    check(baseline["Mean execute time (ms)"] > 0, "execute time: %s" % baseline)
    check(baseline["Mean host time before execute (us)"] >= 0 and
          baseline["Mean host time after execute (us)"] >= 0, "host times: %s" % baseline)
    check(0 < baseline["Executor idle between steps (% of wall)"] < 100,
          "idle share: %s" % baseline["Executor idle between steps (% of wall)"])
    check(offline["baseline"]["summary"]["peak_concurrency"] == 1, "baseline ran alone")
    check(len(offline["speedup_output_throughput"]) == 2, "speed-ups")
    svg = open(plot).read()
    check(svg.startswith("<svg") and svg.count("<polyline") == 8, "plot: %d lines" %
          svg.count("<polyline"))
    failed = run(llmrun, "bench", "offline", bundle, "--max-model-len", "100000",
                 expect_failure=True)
    check("exceeds the model's max_position_embeddings" in failed.stderr, failed.stderr)

    # Decode step time: one row per batch size with its floor, whatever the speed.
    decode = run(llmrun, "bench", "decode", bundle, "--batch", "1,3", "--context", "40",
                 "--steps", "3").stdout
    rows = re.findall(r"^ +(\d+) +40 +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+)%$", decode, re.M)
    check([r[0] for r in rows] == ["1", "3"], "bench decode rows:\n" + decode)
    check(all(float(r[1]) > 0 and float(r[3]) > 0 for r in rows), "bench decode times:\n" + decode)
    check("copy bandwidth:" in decode and "host memcpy" in decode, decode)
    # --profile: each op's time in one step, the rows adding up to the total.
    profile = run(llmrun, "bench", "decode", bundle, "--batch", "2", "--context", "40",
                  "--steps", "1", "--profile").stdout
    ops = re.findall(r"^  (\S+)(?: \S+)? +([\d.]+) +([\d.]+)% +(\d+)$", profile, re.M)
    total = re.search(r"^  all dispatches +([\d.]+) \(each dispatch's wall time\)$", profile, re.M)
    check(total is not None and any(op == "linear" for op, *_ in ops) and
          any(op == "paged_attention" for op, *_ in ops), "bench decode --profile:\n" + profile)
    # At most 14 rows are shown: then they add up to less than the total.
    shown, rounding = sum(float(ms) for _, ms, _, _ in ops), 1e-3 * (len(ops) + 1)
    check(shown <= float(total.group(1)) + rounding and
          (len(ops) == 14 or abs(shown - float(total.group(1))) <= rounding),
          "bench decode --profile sums:\n" + profile)
    # Sampled steps asking for log-probs: the sampler's passes over the
    # vocabulary (top_k and top_p thresholds) and the log-probs' are timed with
    # the rest.
    sampled = run(llmrun, "bench", "decode", bundle, "--batch", "2", "--context", "40",
                  "--steps", "1", "--profile", "--temperature", "0.8", "--top-p", "0.9",
                  "--top-k", "20", "--logprobs", "5").stdout
    check(re.search(r"^ +2 +40 +[\d.]+ ", sampled, re.M) and
          re.search(r"^  sample +[\d.]+ ", sampled, re.M) and
          re.search(r"^  logprobs +[\d.]+ ", sampled, re.M), "bench decode sampled:\n" + sampled)
    for args, message in (
            (("--top-p", "1.5"), "sampling parameter top_p = 1.500000: must be in (0, 1]"),
            (("--temperature", "-1"), "sampling parameter temperature = -1.000000: must be >= 0"),
            (("--top-k", "-3"), "sampling parameter top_k = -3: must be >= 0"),
            (("--top-k", "x"), "--top-k 'x': not an integer"),
            (("--logprobs", "21"), "sampling parameter logprobs = 21: must be in [-1, 20]"),
            (("--context", "100000"), "exceeds the model's max_position_embeddings"),
            (("--batch", "0"), "--batch '0': must be in [1, 4096]"),
            (("--batch", "1,x"), "--batch 'x'"),
            (("--device", "cuda"), "cannot run on --device cuda")):
        failed = run(llmrun, "bench", "decode", bundle, "--context", "40", *args,
                     expect_failure=True)
        check(message in failed.stderr, "bench decode %s: %s" % (args, failed.stderr))
    failed = run(llmrun, "bench", "decode", expect_failure=True)
    check("usage: llmrun bench decode" in failed.stderr, failed.stderr)

    # Served: the same lengths over HTTP; prompts are text the server must
    # tokenize back to exactly the drawn lengths.
    server = subprocess.Popen([llmrun, "serve", bundle, "--port", "0", "--threads", "1",
                               "--kv-cache-memory", "64MiB"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = None
        deadline = time.time() + 60
        while url is None and time.time() < deadline:
            line = server.stdout.readline()
            if not line:
                break
            match = re.search(r"listening on (http://\S+)", line)
            url = match and match.group(1)
        check(url is not None, "llmrun serve did not start")
        result = os.path.join(work, "serve.json")
        run(llmrun, "bench", "serve", "--url", url, "--tokenizer", bundle,
            "--num-prompts", "12", "--random-input-len", "20:60",
            "--random-output-len", "4:12", "--ignore-eos", "--max-concurrency", "4",
            "--request-rate", "200", "--baseline", "sequential", "--result-file", result)
        served = json.load(open(result))
        check(served["workload"]["input_tokens"] == offline["workload"]["input_tokens"],
              "served and offline workloads differ in prompt tokens")
        check_run(served["runs"][0], 12, requested, "serve")
        check_run(served["baseline"], 12, requested, "served sequential baseline")
        check(served["runs"][0]["summary"]["total_input_tokens"] ==
              offline["workload"]["input_tokens"], "server counted other prompt lengths")
        check(served["runs"][0]["summary"]["peak_concurrency"] <= 4, "concurrency limit")
    finally:
        server.terminate()
        server.wait(timeout=30)
    print("ok")


if __name__ == "__main__":
    main()
