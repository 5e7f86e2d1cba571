#!/bin/sh
# llmc-bench-linear on bad arguments: a message and exit status 2 (usage) or
# 1 (a bundle it cannot load), never an abort.
#   bench_linear_errors.sh <llmc-bench-linear> <linear_bench.llmb>
bench=$1 bundle=$2 failed=0
expect() { # status, pattern, arguments...
  status=$1 pattern=$2
  shift 2
  output=$("$bench" "$@" 2>&1)
  got=$?
  if [ "$got" -ne "$status" ] || ! printf '%s' "$output" | grep -q -- "$pattern"; then
    echo "FAIL: llmc-bench-linear $*: exit $got (want $status), output: $output"
    failed=1
  fi
}
expect 2 "bundle is required"
expect 2 "usage: llmc-bench-linear"
expect 0 "usage: llmc-bench-linear" --help
expect 2 "not expected: .*--frobnicate" "$bundle" --frobnicate 3
expect 2 "\-\-threads: 1 required N missing" "$bundle" --threads
expect 2 "\-\-threads 'two': not an integer" "$bundle" --threads two
expect 2 "\-\-threads '1.5': not an integer" "$bundle" --threads 1.5
expect 2 "\-\-threads '0': must be in \[1, 1000000\]" "$bundle" --threads 0
expect 2 "\-\-seconds '-1': must be in (0, 1e+06\]" "$bundle" --seconds -1
expect 1 "llmc-bench-linear: error: .*no-such.llmb" /no-such.llmb --seconds 0.01
exit $failed
