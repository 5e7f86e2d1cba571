#!/usr/bin/env bash
# curl against `llmrun serve`: -N streaming, a 1 MB body sent with
# "Expect: 100-continue", an HTTP/1.0 client, and a clean stop on SIGTERM.
# Usage: curl_test.sh <llmrun> <bundle>
set -euo pipefail
llmrun=$1 bundle=$2
work=$(mktemp -d)
"$llmrun" serve "$bundle" --port 0 --threads 1 2> "$work/log" &
server=$!
trap 'kill -9 $server 2> /dev/null || true; rm -rf "$work"' EXIT

fail() { echo "FAIL: $*"; echo "--- server log"; cat "$work/log"; exit 1; }

for _ in $(seq 600); do
  url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$work/log" || true)
  [ -n "$url" ] && break
  kill -0 $server 2> /dev/null || fail "server exited"
  sleep 0.1
done
[ -n "$url" ] || fail "server did not start"
curl_() { curl -sS --max-time 60 "$@"; }

# Streaming with -N: SSE events as they come, then [DONE], then the end.
curl_ -N "$url/v1/completions" -H 'Content-Type: application/json' \
  -d '{"prompt": "Hello", "max_tokens": 8, "ignore_eos": true, "stream": true}' > "$work/stream"
# (Fewer chunks than tokens when a token ends inside a UTF-8 character.)
[ "$(grep -c '^data: {' "$work/stream")" -ge 2 ] || fail "one chunk: $(cat "$work/stream")"
grep -q '"finish_reason":"length"' "$work/stream" || fail "no finish_reason: $(cat "$work/stream")"
[ "$(grep '^data: ' "$work/stream" | tail -1)" = "data: [DONE]" ] || fail "no final [DONE]"

# A 1 MB body with Expect: 100-continue: padding in "user" (a hint the
# server accepts) is read and changes nothing; a 1 MB prompt is refused for
# its length.
padding=$(head -c 1048576 /dev/zero | tr '\0' 'a')
printf '{"prompt": "Hello", "max_tokens": 2, "user": "%s"}' "$padding" > "$work/big.json"
curl_ -v -H 'Expect: 100-continue' -H 'Content-Type: application/json' \
  --data-binary "@$work/big.json" "$url/v1/completions" > "$work/big.out" 2> "$work/big.err"
grep -q '< HTTP/1.1 100 Continue' "$work/big.err" || fail "no 100 Continue: $(cat "$work/big.err")"
grep -q '"completion_tokens":2' "$work/big.out" || fail "1 MB body: $(head -c 300 "$work/big.out")"
printf '{"prompt": "%s"}' "$padding" > "$work/long.json"
status=$(curl_ -o "$work/long.out" -w '%{http_code}' -H 'Expect: 100-continue' \
  --data-binary "@$work/long.json" "$url/v1/completions")
[ "$status" = 400 ] || fail "1 MB prompt: status $status"
grep -q 'maximum context length' "$work/long.out" || fail "1 MB prompt: $(cat "$work/long.out")"

# HTTP/1.0 has no chunked encoding: the stream is the raw events, ended by
# the server closing the connection.
curl_ --http1.0 -i "$url/v1/chat/completions" -H 'Content-Type: application/json' \
  -d '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "stream": true}' \
  > "$work/http10"
grep -qi '^Transfer-Encoding: chunked' "$work/http10" && fail "chunked reply to HTTP/1.0"
[ "$(grep '^data: ' "$work/http10" | tail -1 | tr -d '\r')" = "data: [DONE]" ] ||
  fail "HTTP/1.0 stream: $(cat "$work/http10")"
curl_ --http1.0 "$url/v1/completions" -H 'Content-Type: application/json' \
  -d '{"prompt": "Hello", "max_tokens": 3, "ignore_eos": true}' | grep -q '"completion_tokens":3' ||
  fail "HTTP/1.0 completion"

kill -TERM $server
status=0
wait $server || status=$?
trap 'rm -rf "$work"' EXIT
[ $status = 0 ] || fail "server exited with $status after SIGTERM"
echo "curl: all checks passed"
