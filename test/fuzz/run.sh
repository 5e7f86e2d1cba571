#!/usr/bin/env bash
# Runs fuzz targets of a LLMSERVE_FUZZ build (all of them, or those named)
# for SECONDS each, as many at a time as there are cores, each on a fresh
# copy of its seed corpus (test/fuzz/corpus/<target>). Fails when a target
# finds a crash, leak, timeout or OOM; the input that did it is left in
# BUILD/fuzz-artifacts/ and named in the output.
#
# usage: test/fuzz/run.sh BUILD SECONDS [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/../.."
export build=$(realpath "$1") seconds=$2
shift 2
targets=("$@")
((${#targets[@]})) || targets=($(ls test/fuzz/corpus))

# The longest input a target tries.
max_len() {
  case $1 in
    fuzz_manifest) echo 16384 ;; # a compiled model's manifest is 15 KB
    fuzz_regex) echo 256 ;;
    fuzz_tokenizer) echo 1024 ;;
    *) echo 4096 ;;
  esac
}

run() {
  local corpus="$build/fuzz-corpus/$1"
  rm -rf "$corpus" && cp -r "test/fuzz/corpus/$1" "$corpus"
  # One input may take 10 s. The outer limit leaves time for
  # LLVMFuzzerInitialize and the leak check.
  timeout $((seconds + 120)) "$build/bin/$1" "$corpus" -max_total_time="$seconds" \
    -max_len="$(max_len "$1")" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/fuzz-artifacts/$1-" >"$build/fuzz-logs/$1.log" 2>&1 || true
}
export -f max_len run

mkdir -p "$build/fuzz-corpus" "$build/fuzz-artifacts" "$build/fuzz-logs"
printf '%s\n' "${targets[@]}" | xargs -P "$(nproc)" -I{} bash -c 'run {}'

# One of libFuzzer's final statistics in log $1.
final_stat() { sed -n "s/^stat::$2: *//p" "$1"; }
failed=0
for t in "${targets[@]}"; do
  log="$build/fuzz-logs/$t.log"
  if grep -q '^Done [0-9]* runs' "$log"; then
    echo "fuzz: $t: ok, $(final_stat "$log" number_of_executed_units) inputs," \
         "$(final_stat "$log" average_exec_per_sec)/s, peak RSS $(final_stat "$log" peak_rss_mb) MB"
  else
    failed=1
    echo "fuzz: $t: FAILED, log $log"
    grep -E 'ERROR|SUMMARY|what\(\)' "$log" | head -5 || true
    grep -o 'Test unit written to .*' "$log" | sed "s/^Test unit written to/  reproducer:/" || true
  fi
done
exit $failed
