#!/usr/bin/env bash
# `make demo`: import and compile the shipped model, then serve it.
#
#   examples/demo.sh [BUILD_DIR]          serve in the foreground on port 8000
#   examples/demo.sh [BUILD_DIR] --check  serve on a free port, send one
#                                         completion request, shut down (CI)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
MODE=${2:-serve}
MODEL=examples/kjv-devil-tiny
OUT=$BUILD/demo
PORT=${PORT:-8000}

mkdir -p "$OUT"
echo "== llmc import $MODEL"
"$BUILD/bin/llmc" import "$MODEL" -o "$OUT/model.mlir"
echo "== llmc compile -> $OUT/model.llmb"
"$BUILD/bin/llmc" compile "$OUT/model.mlir" -o "$OUT/model.llmb" --embed-weights

request() {
  curl -sS "http://127.0.0.1:$1/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt": "And it came to pass", "max_tokens": 48, "temperature": 0.8, "seed": 7}'
}

if [ "$MODE" != "--check" ]; then
  cat <<MSG

== serving on http://127.0.0.1:$PORT (Ctrl-C to stop). In another terminal:

  curl http://127.0.0.1:$PORT/v1/completions -H 'Content-Type: application/json' \\
    -d '{"prompt": "And it came to pass", "max_tokens": 48, "temperature": 0.8}'

MSG
  exec "$BUILD/bin/llmrun" serve "$OUT/model.llmb" --port "$PORT"
fi

# --check: the same steps, non-interactively.
PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BUILD/bin/llmrun" serve "$OUT/model.llmb" --port "$PORT" > "$OUT/serve.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$PORT/health" > /dev/null && break
  kill -0 $SERVER 2>/dev/null || { cat "$OUT/serve.log"; exit 1; }
  sleep 0.1
done
RESPONSE=$(request "$PORT")
echo "$RESPONSE"
echo "$RESPONSE" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
text = r["choices"][0]["text"]
assert r["usage"]["completion_tokens"] > 0 and text.strip(), r
print("completion:", repr(text))'
kill -INT $SERVER
wait $SERVER
trap - EXIT
echo "demo check passed"
