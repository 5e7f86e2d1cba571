// The official `openai` npm client against `llmrun serve`: chat and
// completions, streamed and not, n > 1, stop strings, include_usage, and the
// chunk shapes its streaming helpers rely on.
//
// Usage: node openai_client_test.mjs <llmrun> <bundle>
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { startServer } from './llmrun_server.mjs';

const require = createRequire(path.join(path.dirname(fileURLToPath(import.meta.url)),
                                        '..', 'node', 'package.json'));
const { OpenAI } = require('openai');

const [llmrun, bundle] = process.argv.slice(2);
const API_KEY = 'test-key';

async function collect(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

// Texts of each choice index from completion or chat chunks.
function joinChoices(chunks, field) {
  const texts = [];
  for (const chunk of chunks)
    for (const choice of chunk.choices)
      texts[choice.index] = (texts[choice.index] ?? '') + (field(choice) ?? '');
  return texts;
}

async function main(client) {
  const messages = [{ role: 'user', content: 'Tell me a story.' }];
  const greedy = { temperature: 0, max_tokens: 12 };

  // Chat, not streamed.
  const chat = await client.chat.completions.create({ model: 'llama', messages, ...greedy });
  assert.equal(chat.object, 'chat.completion');
  assert.equal(chat.choices[0].message.role, 'assistant');
  assert.ok(['stop', 'length'].includes(chat.choices[0].finish_reason));
  assert.ok(chat.usage.prompt_tokens > 0 && chat.usage.completion_tokens > 0);
  assert.equal(chat.usage.total_tokens, chat.usage.prompt_tokens + chat.usage.completion_tokens);

  // Chat, streamed with usage: role first, finish_reason last, usage chunk.
  const chunks = await collect(await client.chat.completions.create({
    model: 'llama', messages, ...greedy, stream: true, stream_options: { include_usage: true },
  }));
  assert.equal(chunks[0].object, 'chat.completion.chunk');
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  const usageChunk = chunks.at(-1);
  assert.deepEqual(usageChunk.choices, []);
  assert.deepEqual(usageChunk.usage, chat.usage);
  assert.equal(chunks.at(-2).choices[0].finish_reason, chat.choices[0].finish_reason);
  for (const chunk of chunks.slice(0, -2)) assert.equal(chunk.choices[0].finish_reason, null);
  assert.deepEqual(joinChoices(chunks, (c) => c.delta.content), [chat.choices[0].message.content]);

  // The client's own stream helper assembles the same message.
  const runner = client.chat.completions.stream({ model: 'llama', messages, ...greedy });
  const assembled = await runner.finalChatCompletion();
  assert.equal(assembled.choices[0].message.content, chat.choices[0].message.content);
  assert.equal(assembled.choices[0].message.role, 'assistant');

  // Log-probs in the chat shape, unstreamed and through the stream helper.
  const withLogprobs = { model: 'llama', messages, ...greedy, logprobs: true, top_logprobs: 2 };
  const scored = await client.chat.completions.create(withLogprobs);
  const content = scored.choices[0].logprobs.content;
  assert.equal(content.length, scored.usage.completion_tokens);
  for (const entry of content) {
    assert.ok(entry.logprob <= 0 && Array.isArray(entry.bytes));
    assert.equal(entry.top_logprobs.length, 2);
    // Greedy: the sampled token is the most likely one.
    assert.equal(entry.top_logprobs[0].token, entry.token);
    assert.ok(entry.top_logprobs[0].logprob >= entry.top_logprobs[1].logprob);
  }
  const scoredStream = client.chat.completions.stream(withLogprobs);
  const scoredAssembled = await scoredStream.finalChatCompletion();
  assert.deepEqual(scoredAssembled.choices[0].logprobs.content, content);

  // Completions, both ways.
  const prompt = 'Once upon a time';
  const completion = await client.completions.create({ model: 'llama', prompt, ...greedy,
                                                       ignore_eos: true });
  assert.equal(completion.object, 'text_completion');
  assert.equal(completion.usage.completion_tokens, 12);
  const text = completion.choices[0].text;
  const completionChunks = await collect(await client.completions.create({
    model: 'llama', prompt, ...greedy, ignore_eos: true, stream: true,
  }));
  assert.deepEqual(joinChoices(completionChunks, (c) => c.text), [text]);
  assert.equal(completionChunks.at(-1).choices[0].finish_reason, 'length');

  // n > 1: greedy choices agree; seeded sampling repeats itself.
  const many = await client.completions.create({ model: 'llama', prompt, ...greedy, n: 3,
                                                 ignore_eos: true });
  assert.deepEqual(many.choices.map((c) => c.index), [0, 1, 2]);
  assert.deepEqual(many.choices.map((c) => c.text), [text, text, text]);
  const sampled = { model: 'llama', messages, max_tokens: 12, temperature: 1, seed: 11, n: 2 };
  const first = await client.chat.completions.create(sampled);
  const again = await collect(await client.chat.completions.create({ ...sampled, stream: true }));
  assert.deepEqual(joinChoices(again, (c) => c.delta.content),
                   first.choices.map((c) => c.message.content));
  assert.equal(first.choices.length, 2);

  // Stop strings: the text ends right before the first one, in both modes.
  const chars = Array.from(text);
  let at = 2;
  while (at + 2 < chars.length && !/^[\x21-\x7e]{2}$/.test(chars[at] + chars[at + 1])) at++;
  assert.ok(at + 2 <= chars.length, `no printable pair in ${JSON.stringify(text)}`);
  const stop = chars[at] + chars[at + 1];
  const expected = text.slice(0, text.indexOf(stop));
  const stopped = await client.completions.create({ model: 'llama', prompt, ...greedy,
                                                    ignore_eos: true, stop: [stop, 'never'] });
  assert.equal(stopped.choices[0].text, expected);
  assert.equal(stopped.choices[0].finish_reason, 'stop');
  const stoppedChunks = await collect(await client.completions.create({
    model: 'llama', prompt, ...greedy, ignore_eos: true, stop, stream: true,
  }));
  assert.deepEqual(joinChoices(stoppedChunks, (c) => c.text), [expected]);
  for (const chunk of stoppedChunks) assert.ok(!chunk.choices[0].text.includes(stop));

  // Errors come back as the client's typed errors.
  await assert.rejects(client.completions.create({ model: 'other', prompt }),
                       (e) => e.status === 404 && e.code === 'model_not_found');
  await assert.rejects(client.completions.create({ model: 'llama', prompt, max_tokens: 0 }),
                       (e) => e.status === 400 && e.param === 'max_tokens');
  const models = await client.models.list();
  assert.equal(models.data[0].id, 'llama');
}

const { server, url } = await startServer(llmrun, bundle, '--threads', '1', '--api-key', API_KEY);
const exited = new Promise((resolve) => server.on('exit', (code) => resolve(code)));
const guard = setTimeout(() => { server.kill('SIGKILL'); process.exit(1); }, 120000);
let failed = false;
try {
  await main(new OpenAI({ baseURL: `${url}/v1`, apiKey: API_KEY, maxRetries: 0 }));
  console.log('openai client: all checks passed');
} catch (e) {
  console.error(e);
  failed = true;
}
server.kill('SIGTERM');
const code = await exited;
clearTimeout(guard);
if (code !== 0) console.error(`server exited with ${code}`);
process.exit(failed || code !== 0 ? 1 : 0);
