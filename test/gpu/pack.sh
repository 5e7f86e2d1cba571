#!/bin/bash
# What a stage of run_on_gpu.sh needs, as one xz archive that travels to the
# GPU machine at a fifth of its size. Run from the repository root.
#
#   test/gpu/pack.sh checks|bench|moe|all
#       after `gpu_checks.py prepare build gpu-carry/prepared --tinyllama`
#       (docs/gpu.md), writes gpu-carry/<stage>.tar.xz. checks: the
#       executor's tests and their kernels, llmrun, the step driver and
#       everything prepared but the TinyLlama and quality bundles; bench:
#       llmrun, those, and gpu-carry/baseline; all: both; moe: llmrun and the
#       Qwen3-30B-A3B-shaped bundle. Each takes gpu-carry/lib when it is
#       there. The FP8 checkpoint's weights are left out (10 MB packed): they
#       are the shipped model's, which run_on_gpu.sh quantizes again.
#   test/gpu/pack.sh unpack
#       unpacks every gpu-carry/*.tar.xz in place (run_on_gpu.sh does, first),
#       with Python's tarfile: the GPU machine may have no xz.
set -euo pipefail
STAGE=${1:-}
P=gpu-carry/prepared

if [ "$STAGE" = unpack ]; then
  for archive in gpu-carry/*.tar.xz; do
    [ -e "$archive" ] || continue
    python3 - "$archive" <<'EOF' || { echo "cannot unpack $archive" >&2; exit 1; }
import sys, tarfile
with tarfile.open(sys.argv[1]) as archive:
    archive.extractall(".", **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
EOF
  done
  exit 0
fi

case $STAGE in
  checks | bench | moe | all) ;;
  *) echo "usage: test/gpu/pack.sh checks|bench|moe|all|unpack" >&2; exit 2 ;;
esac
[ -f $P/source_dir ] || { echo "nothing prepared in $P (docs/gpu.md)" >&2; exit 1; }
need() {
  [ -e "$P/$1" ] || { echo "$P/$1 is missing: prepare with $2" >&2; exit 1; }
}
files=(build/bin/llmrun $P/source_dir)
[ -d gpu-carry/lib ] && files+=(gpu-carry/lib)
if [ "$STAGE" = checks ] || [ "$STAGE" = all ]; then
  files+=(build/bin/cuda_gpu_tests build/bin/llmserve-step-driver
          build/test/support/test_kernels.so
          build/test/unit/cuda/test_kernels.sm_90a.cubin)
  for f in $P/*; do
    case ${f#$P/} in
      tinyllama* | quality | qwen3moe* | source_dir) ;;
      *) files+=("$f") ;;
    esac
  done
fi
if [ "$STAGE" = bench ] || [ "$STAGE" = all ]; then
  need tinyllama.sm90.llmb --tinyllama
  files+=($P/tinyllama* $P/quality)
  [ -d gpu-carry/baseline ] && files+=(gpu-carry/baseline)
fi
if [ "$STAGE" = moe ]; then
  need qwen3moe.sm90.llmb --qwen3-moe=LAYERS
  files+=($P/qwen3moe*)
fi
archive=gpu-carry/$STAGE.tar.xz
trap 'rm -f "$archive.part"' EXIT
tar -cf - --exclude=$P/quality/fp8_checkpoint/model.safetensors "${files[@]}" |
  xz -9 -T2 > "$archive.part"
mv "$archive.part" "$archive"
echo "$archive: $(du -h "$archive" | cut -f1)"
