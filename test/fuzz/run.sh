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

# The longest input a target tries, and how long one input may take.
limits() {
  case $1 in
    fuzz_manifest) echo "-max_len=16384 -timeout=10" ;; # a compiled model's manifest is 15 KB
    fuzz_regex) echo "-max_len=256 -timeout=10" ;;
    fuzz_tokenizer) echo "-max_len=1024 -timeout=10" ;;
    *) echo "-max_len=4096 -timeout=10" ;;
  esac
}

run() {
  local corpus="$build/fuzz-corpus/$1"
  rm -rf "$corpus" && cp -r "test/fuzz/corpus/$1" "$corpus"
  # The outer limit leaves time for LLVMFuzzerInitialize and the leak check.
  timeout $((seconds + 120)) "$build/bin/$1" "$corpus" -max_total_time="$seconds" \
    $(limits "$1") -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/fuzz-artifacts/$1-" >"$build/fuzz-logs/$1.log" 2>&1 || true
}
export -f limits run

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
