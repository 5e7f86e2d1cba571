// Encodes and decodes texts with Hugging Face's tokenizers (npm package
// tokenizers@0.23.2), the reference the Python tokenizer is checked against.
// Usage: node encode_hf.js tokenizer.json texts.json out.json
// texts.json: array of strings; out.json: array of {ids, decoded}.
const fs = require("fs");
const { Tokenizer } = require("tokenizers");

async function main() {
  const [tokenizerFile, textsFile, outFile] = process.argv.slice(2);
  const tokenizer = Tokenizer.fromFile(tokenizerFile);
  const texts = JSON.parse(fs.readFileSync(textsFile, "utf8"));
  const out = [];
  for (const text of texts) {
    const ids = (await tokenizer.encode(text, null, { addSpecialTokens: false })).getIds();
    out.push({ ids, decoded: await tokenizer.decode(ids, true) });
  }
  fs.writeFileSync(outFile, JSON.stringify(out));
}

main().catch((e) => { console.error(e); process.exit(1); });
