#!/bin/bash
# Everything that needs an NVIDIA GPU, in one go, on a machine with no MLIR:
# the executor's GPU tests, gpu_checks.py check, and the TinyLlama-shaped
# benchmarks (decode step time against the bandwidth floor, offline and
# served throughput). Run from the repository root after
# `gpu_checks.py prepare build gpu-carry/prepared --tinyllama` made the
# bundles elsewhere (docs/gpu.md); logs go to $OUT (default gpu-logs/).
set -u
OUT=${OUT:-gpu-logs}
mkdir -p "$OUT"
R=gpu-carry/prepared
# The test binaries name their data files by the absolute path of the tree
# they were built in (which `prepare` recorded).
SRC=$(cat $R/source_dir)
[ -e "$SRC" ] || { mkdir -p "$(dirname "$SRC")" && ln -sfn "$PWD" "$SRC"; }
# Libraries llmrun links that the GPU machine may lack (cpp-httplib, brotli).
export LD_LIBRARY_PATH=$PWD/gpu-carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} PYTHONUNBUFFERED=1
B=build/bin/llmrun
T=$R/tinyllama.sm90.llmb
W=/tmp/tinyllama
nvidia-smi -L

echo "== cuda_gpu_tests"
timeout 120 build/bin/cuda_gpu_tests > "$OUT/gpu_tests.log" 2>&1
echo "rc=$?"; tail -3 "$OUT/gpu_tests.log"

echo "== gpu_checks.py check"
timeout 400 python3 test/gpu/gpu_checks.py check build $R > "$OUT/gpu_checks.log" 2>&1
echo "rc=$?"; grep -v "^ok op" "$OUT/gpu_checks.log"; grep -c "^ok op" "$OUT/gpu_checks.log"

echo "== TinyLlama-1.1B-shaped random weights"
python3 test/fixtures/make_fixtures.py --tinyllama $W --dtype bfloat16 > /dev/null

echo "== bench decode"
timeout 120 $B bench decode $T --weights $W --batch 1,16,64 --context 512 --profile \
  > "$OUT/decode.log" 2>&1
echo "rc=$?"; cat "$OUT/decode.log"

echo "== bench offline"
timeout 200 $B bench offline $T --weights $W --num-prompts 64 --random-input-len 128:512 \
  --random-output-len 128 --max-num-seqs 64 --baseline sequential > "$OUT/offline.log" 2>&1
echo "rc=$?"; grep -E "^ +concurrency|Output token throughput" "$OUT/offline.log"

echo "== serve --device cuda, bench serve"
$B serve $T --weights $W --device cuda --port 8123 --max-num-seqs 64 > "$OUT/serve.log" 2>&1 &
server=$!
for _ in $(seq 60); do curl -sf localhost:8123/health > /dev/null && break; sleep 1; done
timeout 150 $B bench serve --url http://127.0.0.1:8123 --tokenizer $T --num-prompts 64 \
  --random-input-len 256 --random-output-len 128 --ignore-eos --max-concurrency 64 \
  > "$OUT/serve_bench.log" 2>&1
echo "rc=$?"; grep -E "Output token throughput|Median (TTFT|TPOT)" "$OUT/serve_bench.log"
kill -INT $server; wait $server; echo "server exit $?"
