#!/bin/bash
# Median TTFT over HTTP on the shared-prefix workload, prefix cache on against
# off, each run against a freshly started `llmrun serve` so that the cache
# starts cold (a server reused across runs already holds the whole workload).
#   test/bench/shared_prefix_ttft.sh BUNDLE [RATE ...]    (rates: inf 4 2)
set -euo pipefail
bundle=$1; shift
rates=("${@:-inf}")
root=$(cd "$(dirname "$0")/../.." && pwd)
llmrun=$root/build/bin/llmrun
port=${PORT:-18803}
workload=(--dataset shared-prefix --gsp-num-groups 4 --gsp-prompts-per-group 16
          --gsp-system-prompt-len 192 --gsp-question-len 16 --gsp-output-len 16
          --ignore-eos --tokenizer "$bundle" --seed 1)
median_ttft() { # rate, extra serve flags...
  local rate=$1; shift
  "$llmrun" serve "$bundle" --port "$port" --threads 1 --kv-cache-memory 512MiB \
    --max-num-seqs 64 "$@" > /dev/null 2>&1 &
  local server=$!
  for _ in $(seq 100); do
    (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null && break
    sleep 0.1
  done
  "$llmrun" bench serve --url "http://127.0.0.1:$port" "${workload[@]}" \
    --request-rate "$rate" 2> /dev/null | awk '/Median TTFT/ {print $NF}'
  kill "$server"; wait "$server" 2> /dev/null || true
}
printf '%-6s %14s %14s %8s\n' rate "cache on (ms)" "cache off (ms)" ratio
for rate in "${rates[@]}"; do
  on=$(median_ttft "$rate")
  off=$(median_ttft "$rate" --no-prefix-caching)
  awk -v r="$rate" -v on="$on" -v off="$off" \
    'BEGIN { printf "%-6s %14s %14s %7.2fx\n", r, on, off, off / on }'
done
