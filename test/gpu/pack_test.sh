#!/bin/bash
# test/gpu/pack.sh in a scratch tree: each stage's archive holds what that
# stage reads and not the others' share, `unpack` in another tree restores
# every file but the FP8 checkpoint's weights, and each misuse is a clear
# error (no stage, nothing prepared, a stage whose bundles were not
# prepared, a file missing, an archive that is not one).
set -u
PACK=$(cd "$(dirname "$0")" && pwd)/pack.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# expect RC TEXT COMMAND...: the command exits RC and prints TEXT.
expect() {
  local rc=$1 text=$2 out got
  shift 2
  out=$("$@" 2>&1)
  got=$?
  [ "$got" = "$rc" ] || fail "$* exited $got, not $rc: $out"
  grep -q -- "$text" <<<"$out" || fail "$*: '$text' not in: $out"
}
# members ARCHIVE: the archive's file names, one a line.
members() {
  python3 -c "import sys, tarfile; print('\n'.join(m.name for m in tarfile.open(sys.argv[1]) if m.isfile()))" "$1"
}
create() { for f in "$@"; do mkdir -p "$(dirname "$f")" && echo "$f" > "$f"; done; }

P=gpu-carry/prepared
mkdir -p "$work/here" && cd "$work/here" || exit 1
expect 2 usage "$PACK"
expect 2 usage "$PACK" everything
expect 1 "nothing prepared in $P" "$PACK" checks
create build/bin/llmrun build/bin/cuda_gpu_tests build/bin/llmserve-step-driver \
  build/test/support/test_kernels.so build/test/unit/cuda/test_kernels.sm_90a.cubin \
  $P/source_dir $P/ops/case/op.mlir $P/llama.sm90.llmb/manifest.json \
  $P/quality/text $P/quality/fp8_checkpoint/config.json \
  $P/quality/fp8_checkpoint/model.safetensors gpu-carry/lib/libonig.so.5 \
  gpu-carry/baseline/commit
expect 1 "tinyllama.sm90.llmb is missing: prepare with --tinyllama" "$PACK" bench
expect 1 "qwen3moe.sm90.llmb is missing: prepare with --qwen3-moe" "$PACK" moe
create $P/tinyllama.sm90.llmb/manifest.json $P/tinyllama_config/config.json
for stage in checks bench all; do
  expect 0 "gpu-carry/$stage.tar.xz" "$PACK" $stage
done

checks=$(members gpu-carry/checks.tar.xz)
for f in build/bin/cuda_gpu_tests build/bin/llmrun $P/ops/case/op.mlir \
    $P/llama.sm90.llmb/manifest.json $P/source_dir gpu-carry/lib/libonig.so.5; do
  grep -qx "$f" <<<"$checks" || fail "checks.tar.xz lacks $f"
done
grep -q -e tinyllama -e quality -e baseline <<<"$checks" && fail "checks.tar.xz holds bench's files"
bench=$(members gpu-carry/bench.tar.xz)
for f in build/bin/llmrun $P/tinyllama.sm90.llmb/manifest.json $P/tinyllama_config/config.json \
    $P/quality/text $P/quality/fp8_checkpoint/config.json gpu-carry/baseline/commit; do
  grep -qx "$f" <<<"$bench" || fail "bench.tar.xz lacks $f"
done
grep -q -e /ops/ -e cuda_gpu_tests -e model.safetensors <<<"$bench" &&
  fail "bench.tar.xz holds checks' files or the FP8 weights"

mkdir -p "$work/there/gpu-carry" && cp gpu-carry/all.tar.xz "$work/there/gpu-carry/"
(cd "$work/there" && "$PACK" unpack) || fail "unpack"
diff -r --exclude='*.tar.xz' --exclude=model.safetensors . "$work/there" || fail "unpacked files differ"
[ -e "$work/there/$P/quality/fp8_checkpoint/model.safetensors" ] && fail "the FP8 weights travelled"

rm build/bin/llmserve-step-driver
expect 2 "llmserve-step-driver" "$PACK" checks
[ -e gpu-carry/checks.tar.xz.part ] && fail "a failed pack left its part"
echo "not an archive" > "$work/there/gpu-carry/broken.tar.xz"
expect 1 "cannot unpack gpu-carry/broken.tar.xz" bash -c "cd '$work/there' && '$PACK' unpack"
echo "ok: pack.sh"
