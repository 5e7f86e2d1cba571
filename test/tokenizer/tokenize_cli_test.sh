#!/usr/bin/env bash
# `llmrun tokenize` on bad arguments and bad input lines: a clear message and
# a non-zero exit, never a crash. Uses a tokenizer built in the test.
# usage: tokenize_cli_test.sh <llmrun binary>
set -u
llmrun=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# A byte-level tokenizer with only the 256 byte tokens.
/usr/bin/python3 - "$dir/tokenizer.json" <<'PY'
import json, sys
printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
chars, n = {}, 0
for b in range(256):
    if b in printable:
        chars[b] = chr(b)
    else:
        chars[b] = chr(256 + n); n += 1
bl = {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}
json.dump({"model": {"type": "BPE", "vocab": {chars[b]: b for b in range(256)}, "merges": []},
           "pre_tokenizer": bl, "decoder": bl, "added_tokens": []}, open(sys.argv[1], "w"))
PY
failures=0
expect() { # expect <description> <stdin> <expected exit> <expected output substring> <args...>
  local what=$1 input=$2 want_rc=$3 want=$4
  shift 4
  local out rc
  out=$(printf '%s' "$input" | "$llmrun" tokenize "$@" 2>&1)
  rc=$?
  if [[ $rc -ne $want_rc || $out != *"$want"* ]]; then
    echo "FAIL $what: exit $rc, output: $out"
    failures=$((failures + 1))
  fi
}
expect "encode" '"hi"'$'\n' 0 '[104,105]' --tokenizer "$dir/tokenizer.json"
expect "decode" '[104,105]'$'\n' 0 '"hi"' --tokenizer "$dir" --decode
expect "no tokenizer" '' 2 '--tokenizer is required'
expect "unknown argument" '' 2 "argument was not expected: --bogus" --tokenizer "$dir" --bogus
expect "missing file" '' 1 "$dir/none.json: cannot open" --tokenizer "$dir/none.json"
expect "not JSON" 'hello'$'\n' 1 'stdin line 1: [json.exception.parse_error' --tokenizer "$dir"
expect "not a string" '"ok"'$'\n''42'$'\n' 1 'stdin line 2: expected a JSON string' --tokenizer "$dir"
expect "not ids" '["a"]'$'\n' 1 'expected a token id, got "a"' --tokenizer "$dir" --decode
expect "unknown id" '[300]'$'\n' 1 'token id 300 is not in the vocabulary' --tokenizer "$dir" --decode
if ((failures)); then exit 1; fi
echo "PASS"
