// The parity and benchmark corpus: documents from Debian's text packages
// (fortunes in English, German, Russian and Chinese; the King James Bible;
// the Devil's Dictionary) plus hand-written hard cases.
'use strict';
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const { execFileSync } = require('child_process');

const FORTUNES = '/usr/share/games/fortunes';

// Every `step`-th fortune of the given files, up to `count`.
function fortunes(files, count) {
  const all = [];
  for (const f of files) {
    const text = fs.readFileSync(path.join(FORTUNES, f), 'utf8');
    for (const doc of text.split(/^%\n/m)) if (doc.trim()) all.push(doc);
  }
  if (all.length < count) throw new Error(`only ${all.length} fortunes in ${files}`);
  const step = all.length / count;
  return Array.from({ length: count }, (_, i) => all[Math.floor(i * step)]);
}

function bibleChapters() {
  const books = ['Gen', 'Exod', 'Ps', 'Prov', 'Isa', 'Matt', 'John', 'Rom', 'Rev'];
  const docs = [];
  for (const book of books)
    for (let ch = 1; ch <= 12; ++ch)
      docs.push(execFileSync('bible', ['-f', `${book}${ch}:1-200`], { encoding: 'utf8' }));
  return docs;
}

// Entries of the dictd database, through its index (base64 offsets).
function devilEntries(count) {
  const b64 = (s) => [...s].reduce((n, c) =>
    n * 64 + 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.indexOf(c), 0);
  const data = zlib.gunzipSync(fs.readFileSync('/usr/share/dictd/devil.dict.dz'));
  const entries = fs.readFileSync('/usr/share/dictd/devil.index', 'utf8').trim().split('\n')
    .filter((l) => !l.startsWith('00'))
    .map((l) => { const [, off, len] = l.split('\t');
                  return data.subarray(b64(off), b64(off) + b64(len)).toString('utf8'); });
  const step = entries.length / count;
  return Array.from({ length: count }, (_, i) => entries[Math.floor(i * step)]);
}

const HARD_CASES = [
  '', ' ', '  ', '\n', '\r\n', 'a\r\nb\r\n\r\nc', '\t\t x', 'trailing   ', '   leading',
  'multiple     spaces  between\twords', '\n\n\n  \n x', ' \u00a0 \u3000\u2003x\u2028y\u0085z',
  'emoji 😀😃 family 👨‍👩‍👧‍👦 flags 🇩🇪🇺🇸 skin 👍🏽 keycap 1️⃣',
  'ZWJ\u200dZWNJ\u200cword\ufeffbom',
  'control \u0000\u0001\u0007\u001b[31m\u007f\u009f chars',
  "it's we're they've I'm he'll she'd IT'S WE'RE I'M 'S ſ 'ſ x'll y'LL",
  "don't 'twas rock'n'roll '' ''' 's 'st",
  '<|endoftext|>', 'before<|endoftext|>after', '<|begin_of_text|>Hi<|eot_id|>',
  '<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n', '<s>[INST] hi [/INST]</s>',
  '<s> <unk> </s>', '<|endoftext', '<<|im_end|>>',
  '12345678901234567890 3.14159 1,000,000 ٣٤٥ ⅫⅣ ²³ ①②',
  'Äpfel Ä A\u0308 é e\u0301 Å A\u030a ﬁ Ω Ω 가 \u1100\u1161\u11a8 ḱ\u0323',
  '한국어 텍스트 日本語のテキスト 中文文本，标点。 עברית العربية हिन्दी ไทย',
  'x'.repeat(300) + ' ' + 'ab'.repeat(200),
  '!!!???...,,,;;; ((())) [[[]]] {{{}}} @@@ ### $$$ %%% ^^^ &&& ***',
  'code: for (int i = 0; i < n; ++i) { x[i] += y[i] * 2; }\n\tif (a != b) return;\n',
  'https://example.com/path?query=1&b=2#frag user@example.com',
  '\u{1F600}\u{10FFFF}\u{E000}\u{FFFD} \u{1D400}\u{1D7D8}',
  "HelloWorld CamelCaseString HTTPServer iOS McDonald's O'NEIL'S DON'T \u01c5ungla \u02b0mod \u65e5\u672c\u30ab\u30bf",
  'marks a\u0301b \u0301x \u0995\u09cd\u09b7 \u0915\u093f\u0924\u093e\u092c \u0e01\u0e34\u0e19 \u20dd\u20dd!',
  'paths /usr/bin/env a/b/c\n//x/\r\n/ http://x.y/z/',
  '<start_of_turn>user\nmarkup <p> </p> a> </x> <div> </div>\t\t<td>1</td>  \u2581\u2581 x<end_of_turn>\n',
];

function documents() {
  return [
    ...fortunes(['fortunes', 'computers', 'science', 'wisdom', 'literature'], 150),
    ...fortunes(['de/computer', 'de/sprichwortev', 'de/wusstensie', 'de/zitate', 'de/sprueche'].filter(
      (f) => fs.existsSync(path.join(FORTUNES, f))), 120),
    ...fortunes(fs.readdirSync(path.join(FORTUNES, 'ru')).filter((f) => !f.includes('.'))
      .map((f) => 'ru/' + f), 120),
    ...fortunes(['chinese', 'tang300', 'song100'], 120),
    ...bibleChapters(),
    ...devilEntries(100),
    ...HARD_CASES,
  ];
}

module.exports = { documents, HARD_CASES };
