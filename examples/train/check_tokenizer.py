"""Checks that the converted tokenizer.json tokenizes exactly like the
SentencePiece model it came from, on the whole corpus.

1. Every line of every document (training and validation): spm_encode ids ==
   the Python tokenizer reading tokenizer.json (which trains the model).
2. With --node-modules (a folder holding npm tokenizers@0.23.2): every whole
   document, newlines and chat special tokens included, encoded by Hugging
   Face's tokenizers == the Python tokenizer, and decoding gives the text back.
3. With --llmrun (llmserve's `llmrun`): every whole document encoded by
   `llmrun tokenize --no-special-tokens` == the Python tokenizer.

  /usr/bin/python3 examples/train/check_tokenizer.py --work /tmp/kjv-devil-tiny-work \
      --tokenizer examples/kjv-devil-tiny/tokenizer.json --node-modules /tmp/tok/node_modules
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import corpus
import tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))


def documents(seed):
    split = corpus.build(seed)
    docs = []
    for part in split.values():
        for kind, texts in part.items():
            docs += [f"<s>{t}</s>" if kind == "chat" else t for t in texts]
    return docs


def without_specials(text, separator):
    for special in tokenizer.ALL_SPECIALS:
        text = text.replace(special, separator)
    return text


def check_against_spm(tok, spm_model, docs):
    lines = [line for d in docs for line in without_specials(d, "\n").split("\n") if line]
    out = subprocess.run(["spm_encode", f"--model={spm_model}", "--output_format=id"],
                         input="\n".join(lines) + "\n", capture_output=True, text=True, check=True).stdout
    expected = [[int(i) for i in row.split()] for row in out.split("\n")[:-1]]
    if len(expected) != len(lines):
        raise SystemExit(f"spm_encode returned {len(expected)} rows for {len(lines)} lines")
    bad = [(line, want, tok.encode(line)) for line, want in zip(lines, expected) if tok.encode(line) != want]
    tokens = sum(map(len, expected))
    print(f"spm_encode vs tokenizer.json: {len(lines)} lines, {tokens} tokens, {len(bad)} lines differ")
    for line, want, got in bad[:5]:
        print(f"  {line!r}\n    spm_encode {want}\n    python     {got}")
    return not bad


def check_against_hf(tok, tokenizer_json, docs, node_modules):
    with tempfile.TemporaryDirectory() as tmp:
        texts, result = os.path.join(tmp, "texts.json"), os.path.join(tmp, "out.json")
        with open(texts, "w") as f:
            json.dump(docs, f)
        subprocess.run(["node", os.path.join(HERE, "encode_hf.js"), tokenizer_json, texts, result],
                       check=True, env={**os.environ, "NODE_PATH": node_modules})
        with open(result) as f:
            reference = json.load(f)
    bad = 0
    for doc, ref in zip(docs, reference):
        ids = tok.encode_with_specials(doc)
        # Decoding gives the text back, except that each piece between special
        # tokens was normalized with its own leading space.
        plain = without_specials(doc, "")
        gives_back = ref["decoded"] == plain or any(s in doc for s in tokenizer.CHAT_SPECIALS)
        if ids != ref["ids"] or tok.decode(ids) != ref["decoded"] or not gives_back:
            bad += 1
            if bad <= 5:
                print(f"  {doc[:80]!r}\n    tokenizers {ref['ids'][:24]}\n    python     {ids[:24]}")
    tokens = sum(len(r["ids"]) for r in reference)
    print(f"tokenizers@0.23.2 vs python: {len(docs)} documents, {tokens} tokens, {bad} differ")
    return bad == 0


def check_against_llmrun(tok, tokenizer_json, docs, llmrun):
    out = subprocess.run([llmrun, "tokenize", "--tokenizer", tokenizer_json, "--no-special-tokens"],
                         input="".join(json.dumps(d) + "\n" for d in docs), capture_output=True,
                         text=True, check=True).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    bad = sum(row != tok.encode_with_specials(doc) for row, doc in zip(rows, docs))
    bad += abs(len(rows) - len(docs))
    print(f"llmrun tokenize vs python: {len(docs)} documents, {sum(map(len, rows))} tokens, {bad} differ")
    return bad == 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", required=True, help="the training run's --work folder (holds spm.model)")
    p.add_argument("--tokenizer", required=True, help="tokenizer.json to check")
    p.add_argument("--node-modules", help="node_modules folder with tokenizers@0.23.2")
    p.add_argument("--llmrun", help="llmserve's llmrun, to check its tokenizer too")
    p.add_argument("--seed", type=int, default=1234, help="the training run's --seed")
    a = p.parse_args()
    tok = tokenizer.Tokenizer(a.tokenizer)
    docs = documents(a.seed)
    ok = check_against_spm(tok, os.path.join(a.work, "spm.model"), docs)
    if a.node_modules:
        ok = check_against_hf(tok, a.tokenizer, docs, a.node_modules) and ok
    if a.llmrun:
        ok = check_against_llmrun(tok, a.tokenizer, docs, a.llmrun) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
