#!/bin/bash
# Everything that needs an NVIDIA GPU, on a machine with no MLIR: every check
# (the executor's GPU tests, gpu_checks.py check, the torch reference against
# transformers on every family's fixture), then every benchmark on a
# TinyLlama-1.1B-shaped bundle (decode steps against the bandwidth floor with
# each op's time, the same with an FP8 KV cache, with int8 and int4 weights
# and with an FP8 checkpoint's weights, W8A16 and W8A8, the shipped model's
# perplexity in bf16, int8, int4, W8A16 and W8A8 against f32, the linears of a
# 4096-row step in bf16, W8A16 and W8A8 beside cuBLAS and torch._scaled_mm,
# a 2047-token prefill,
# cuBLAS on the same linear shapes,
# transformers and torch SDPA on the same checkpoint, offline and served
# throughput (serve against offline on one workload), 512 sequences at once,
# a KV cache sized by --gpu-memory-utilization). Run from the repository root after
# `gpu_checks.py prepare build gpu-carry/prepared --tinyllama` made the
# bundles elsewhere and test/gpu/pack.sh packed them (docs/gpu.md); logs go
# to $OUT (default gpu-logs/).
#
#   test/gpu/run_on_gpu.sh [checks|bench|all]      (default all)
#   test/gpu/run_on_gpu.sh moe
#       the mixture of experts alone: decode steps and offline throughput of
#       the Qwen3-30B-A3B-shaped bundle that `prepare --qwen3-moe=LAYERS`
#       compiled, on random bf16 weights of that many layers written here
#       (about 1.3 GB a layer).
#
# A bundle of the same model compiled by another commit's llmc in
# gpu-carry/baseline/tinyllama.sm90.llmb is timed beside it, in the same run.
set -u
STAGE=${1:-all}
OUT=${OUT:-gpu-logs}
mkdir -p "$OUT"
R=gpu-carry/prepared
# What test/gpu/pack.sh packed unpacks in place first.
test/gpu/pack.sh unpack || exit 1
# The test binaries name their data files by the absolute path of the tree
# they were built in (which `prepare` recorded).
SRC=$(cat $R/source_dir)
[ -e "$SRC" ] || { mkdir -p "$(dirname "$SRC")" && ln -sfn "$PWD" "$SRC"; }
# Libraries llmrun links that the GPU machine may lack (docs/gpu.md).
export LD_LIBRARY_PATH=$PWD/gpu-carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} PYTHONUNBUFFERED=1
B=build/bin/llmrun
T=$R/tinyllama.sm90.llmb
BASE=gpu-carry/baseline/tinyllama.sm90.llmb
W=/tmp/tinyllama
nvidia-smi -L

if [ "$STAGE" = moe ]; then
  M=$R/qwen3moe.sm90.llmb
  layers=$(python3 -c "import json; print(json.load(open('$R/qwen3moe_config/config.json'))['num_hidden_layers'])")
  echo "== Qwen3-30B-A3B-shaped random weights, $layers layers"
  python3 test/fixtures/make_fixtures.py --qwen3-moe /tmp/qwen3moe --layers "$layers" > /dev/null
  timeout 150 $B bench decode $M --weights /tmp/qwen3moe --batch 1,16,64 --context 512 \
    --profile > "$OUT/moe_decode.log" 2>&1
  echo "rc=$?"; grep -E "^(weights|copy)|^ +[0-9]+ +[0-9]+ " "$OUT/moe_decode.log"
  echo "== sampled, a 151,936-token vocabulary (temperature 0.8, top_p 0.9, top_k 20)"
  timeout 100 $B bench decode $M --weights /tmp/qwen3moe --batch 1,64 --context 512 \
    --temperature 0.8 --top-p 0.9 --top-k 20 --profile > "$OUT/moe_decode_sampled.log" 2>&1
  echo "rc=$?"; grep -E "^ +[0-9]+ +[0-9]+ |^  (sample|adjust_logits) " \
    "$OUT/moe_decode_sampled.log"
  timeout 150 $B bench offline $M --weights /tmp/qwen3moe --num-prompts 64 \
    --random-input-len 512 --random-output-len 128 --max-num-seqs 64 \
    > "$OUT/moe_offline.log" 2>&1
  echo "rc=$?"; grep -E "Output token throughput|Median (TTFT|TPOT)" "$OUT/moe_offline.log"
  exit 0
fi

if [ "$STAGE" != bench ]; then
  echo "== cuda_gpu_tests"
  timeout 120 build/bin/cuda_gpu_tests > "$OUT/gpu_tests.log" 2>&1
  echo "rc=$?"; tail -3 "$OUT/gpu_tests.log"

  echo "== gpu_checks.py check"
  timeout 330 python3 test/gpu/gpu_checks.py check build $R > "$OUT/gpu_checks.log" 2>&1
  echo "rc=$?"; grep -v "^ok op" "$OUT/gpu_checks.log"; grep -c "^ok op" "$OUT/gpu_checks.log"

  echo "== the torch reference against transformers' modeling code, every family"
  timeout 120 python3 test/gpu/transformers_parity.py $R > "$OUT/transformers_parity.log" 2>&1
  echo "rc=$?"; cat "$OUT/transformers_parity.log"
fi
[ "$STAGE" = checks ] && exit 0

echo "== the shipped model's perplexity on a held-out text, each sm_90 format against f32 on the CPU"
Q=$R/quality
# The FP8 checkpoint's weights travel in no archive (test/gpu/pack.sh): they
# are the shipped model's, quantized again here the same way.
[ -e $Q/fp8_checkpoint/model.safetensors ] || python3 -c "import sys
sys.path.insert(0, 'test/e2e')
import quantized_model_test
quantized_model_test.write_quantized_checkpoint('$Q/fp8_checkpoint', 'fp8')"
for format in bf16 int8 int4 w8a16 w8a8; do
  timeout 60 $B bench ppl $Q/$format.sm90.llmb --baseline $Q/f32.cpu.llmb --text $Q/text \
    --context 64 --max-tokens 600 > "$OUT/ppl_$format.log" 2>&1
  echo "rc=$? ($format)"; grep -E "^(perplexity|baseline ppl|ppl change|mean KL|same top-1)" \
    "$OUT/ppl_$format.log" | tr -s ' ' | paste -sd ';'
done

echo "== TinyLlama-1.1B-shaped random weights"
python3 test/fixtures/make_fixtures.py --tinyllama $W --dtype bfloat16 > /dev/null

decode() {  # bundle, log name, extra flags
  for context in 512 2048; do
    timeout 150 $B bench decode "$1" --weights $W --batch 1,16,64,256 --context $context \
      "${@:3}" > "$OUT/$2_$context.log" 2>&1
    echo "rc=$? ($2, context $context)"
    grep -E "^ +[0-9]+ +[0-9]+ " "$OUT/$2_$context.log"
  done
}
prefill() {  # bundle, log name: one 2047-token prompt (the model's 2048 positions
             # less the output token) in one step, 5 times
  timeout 60 $B bench offline "$1" --weights $W --num-prompts 5 --random-input-len 2047 \
    --random-output-len 1 --max-num-seqs 1 --max-num-batched-tokens 2048 > "$OUT/$2.log" 2>&1
  echo "rc=$? ($2)"; grep -E "Median TTFT" "$OUT/$2.log"
}
echo "== bench decode"
decode $T decode --profile
head -3 "$OUT/decode_512.log"
prefill $T prefill
echo "== bench decode, sampled (temperature 0.8, top_p 0.9, top_k 20: the sampler's passes)"
timeout 100 $B bench decode $T --weights $W --batch 1,64 --context 512 --temperature 0.8 \
  --top-p 0.9 --top-k 20 --profile > "$OUT/decode_sampled.log" 2>&1
echo "rc=$?"; grep -E "^ +[0-9]+ +[0-9]+ |^  (sample|adjust_logits) " "$OUT/decode_sampled.log"
echo "== bench decode, FP8 KV cache (against bf16 above: half the KV bytes)"
timeout 150 $B bench decode $R/tinyllama-fp8kv.sm90.llmb --weights $W --batch 1,64,256 \
  --context 2048 --profile > "$OUT/decode_fp8kv_2048.log" 2>&1
echo "rc=$?"; grep -E "^(weights|copy)|^ +[0-9]+ +[0-9]+ " "$OUT/decode_fp8kv_2048.log"
echo "== bench decode, int8 and int4 weights (llmc compile --quantize: against bf16 above)"
for scheme in int8 int4; do
  timeout 120 $B bench decode $R/tinyllama-$scheme.sm90.llmb --weights $W --batch 1,16,64 \
    --context 512 --profile > "$OUT/decode_${scheme}_512.log" 2>&1
  echo "rc=$? ($scheme)"; grep -E "^(weights|copy)|^ +[0-9]+ +[0-9]+ " "$OUT/decode_${scheme}_512.log"
done
echo "== bench decode, an FP8 checkpoint's weights read as stored (against bf16 above)"
python3 test/fixtures/make_fixtures.py --tinyllama /tmp/tinyllama-fp8 --fp8 > /dev/null
timeout 120 $B bench decode $R/tinyllama-fp8-weights.sm90.llmb --weights /tmp/tinyllama-fp8 \
  --batch 1,16,64 --context 512 --profile > "$OUT/decode_fp8_weights_512.log" 2>&1
echo "rc=$?"; grep -E "^(weights|copy)|^ +[0-9]+ +[0-9]+ " "$OUT/decode_fp8_weights_512.log"
echo "== bench decode, the same checkpoint W8A8 (llmc compile --fp8-activations)"
timeout 120 $B bench decode $R/tinyllama-w8a8.sm90.llmb --weights /tmp/tinyllama-fp8 \
  --batch 1,16,64 --context 512 --profile > "$OUT/decode_w8a8_512.log" 2>&1
echo "rc=$?"; grep -E "^(weights|copy)|^ +[0-9]+ +[0-9]+ " "$OUT/decode_w8a8_512.log"
echo "== the linears of a 4096-row step: bf16, FP8 W8A16 and W8A8 (bench decode --profile)"
for bundle in tinyllama tinyllama-fp8-weights tinyllama-w8a8; do
  weights=$W; [ $bundle = tinyllama ] || weights=/tmp/tinyllama-fp8
  timeout 120 $B bench decode $R/$bundle.sm90.llmb --weights $weights --batch 4096 \
    --context 128 --profile > "$OUT/rows4096_$bundle.log" 2>&1
  echo "rc=$? ($bundle)"
  grep -E "^ +[0-9]+ +[0-9]+ |^  (linear|dispatch_region|quantize_fp8|all dispatches)" "$OUT/rows4096_$bundle.log"
done
timeout 120 python3 test/gpu/linear_reference.py $R/tinyllama_config/config.json --rows 4096 \
  --fp8 > "$OUT/linear_reference_4096.log" 2>&1
echo "rc=$? (cuBLAS bf16 and torch._scaled_mm e4m3 on the same shapes)"
grep -A2 "one .*step's linears" "$OUT/linear_reference_4096.log"; grep unavailable "$OUT/linear_reference_4096.log"
if [ -d $BASE ]; then
  echo "== bench decode, baseline bundle ($(cat gpu-carry/baseline/commit 2>/dev/null))"
  decode $BASE baseline_decode --profile
  prefill $BASE baseline_prefill
fi

echo "== cuBLAS on the model's linear shapes"
timeout 120 python3 test/gpu/linear_reference.py $R/tinyllama_config/config.json \
  > "$OUT/linear_reference.log" 2>&1
echo "rc=$?"; sed -n '/one decode step/,$p' "$OUT/linear_reference.log"

echo "== the peer: transformers generate on the same checkpoint, torch SDPA"
timeout 300 python3 test/gpu/transformers_reference.py $W > "$OUT/transformers.log" 2>&1
echo "rc=$?"; grep -E "^(transformers|torch)" "$OUT/transformers.log" || tail -3 "$OUT/transformers.log"
for batch in 1 64; do
  timeout 60 $B bench offline $T --weights $W --num-prompts $((batch > 1 ? batch : 4)) \
    --random-input-len 512 --random-output-len 128 --max-num-seqs $batch \
    > "$OUT/offline_batch$batch.log" 2>&1
  echo "rc=$? (llmrun, batch $batch, 512 + 128 tokens)"
  grep -E "Output token throughput" "$OUT/offline_batch$batch.log"
done

echo "== bench offline (the nano-vllm workload: 256 prompts, 100-1024 tokens in and out)"
timeout 150 $B bench offline $T --weights $W --kv-cache-gb 40 > "$OUT/offline.log" 2>&1
echo "rc=$?"; grep -E "Output token throughput|Median (TTFT|TPOT)" "$OUT/offline.log"
echo "== the same with decode-only steps (every decode step a graph replay)"
timeout 150 $B bench offline $T --weights $W --kv-cache-gb 40 --decode-only-steps \
  > "$OUT/offline_decode_only.log" 2>&1
echo "rc=$?"; grep -E "Output token throughput|Median (TTFT|TPOT)" "$OUT/offline_decode_only.log"

echo "== bench offline, 512 sequences at once (decode graphs up to 512), overlapped against not"
timeout 200 $B bench offline $T --weights $W --kv-cache-gb 40 --num-prompts 512 \
  --random-input-len 128 --random-output-len 128 --max-num-seqs 512 --baseline no-overlap \
  > "$OUT/offline_512.log" 2>&1
echo "rc=$?"; grep -E "Output token throughput|Median (TTFT|TPOT)|idle between|concurrency 512:" \
  "$OUT/offline_512.log"

echo "== serve --device cuda (KV cache by --gpu-memory-utilization), bench serve"
$B serve $T --weights $W --device cuda --port 8123 --max-num-seqs 64 \
  --gpu-memory-utilization 0.9 > "$OUT/serve.log" 2>&1 &
server=$!
for _ in $(seq 60); do curl -sf localhost:8123/health > /dev/null && break; sleep 1; done
timeout 100 $B bench serve --url http://127.0.0.1:8123 --tokenizer $T --num-prompts 64 \
  --random-input-len 256 --random-output-len 128 --ignore-eos --max-concurrency 64 \
  > "$OUT/serve_bench.log" 2>&1
echo "rc=$?"; grep -E "Output token throughput|Median (TTFT|TPOT)" "$OUT/serve_bench.log"
kill -INT $server; wait $server; echo "server exit $?"; grep -i -m2 "kv cache" "$OUT/serve.log"
echo "== the same workload in process (served / offline)"
timeout 60 $B bench offline $T --weights $W --num-prompts 64 --random-input-len 256 \
  --random-output-len 128 --max-num-seqs 64 > "$OUT/offline_serve_workload.log" 2>&1
echo "rc=$?"; grep -E "Output token throughput|Median (TTFT|TPOT)" "$OUT/offline_serve_workload.log"
