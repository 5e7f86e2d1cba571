// Structured output and tool calling through the official `openai` npm
// client, against the shipped model, which knows nothing of JSON:
// `chat.completions.parse` with a strict JSON schema, streamed
// (`chat.completions.stream`) and not, `json_object`, and the tool-call round
// trip (a forced call, its result, the answer), streamed and not. The grammar
// alone makes every output parse.
//
// Usage: node openai_structured_output_test.mjs <llmrun> <bundle>
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { startServer } from './llmrun_server.mjs';

const require = createRequire(path.join(path.dirname(fileURLToPath(import.meta.url)),
                                        '..', 'node', 'package.json'));
const { OpenAI } = require('openai');

const [llmrun, bundle] = process.argv.slice(2);

// A verse reference: every size bounded, so a weak model's output still ends
// within the 256-token context.
const verseSchema = {
  type: 'object',
  properties: {
    book: { type: 'string', enum: ['Genesis', 'Exodus', 'Psalms', 'John'] },
    chapter: { type: 'integer', minimum: 1, maximum: 150 },
    verses: { type: 'array', items: { type: 'integer', minimum: 1, maximum: 176 },
              minItems: 1, maxItems: 3 },
    quote: { type: 'string', maxLength: 40 },
    canonical: { type: 'boolean' },
  },
  required: ['book', 'chapter', 'verses', 'quote', 'canonical'],
  additionalProperties: false,
};

function checkVerse(v) {
  assert.deepEqual(Object.keys(v), ['book', 'chapter', 'verses', 'quote', 'canonical']);
  assert.ok(verseSchema.properties.book.enum.includes(v.book), v.book);
  assert.ok(Number.isInteger(v.chapter) && v.chapter >= 1 && v.chapter <= 150, v.chapter);
  assert.ok(v.verses.length >= 1 && v.verses.length <= 3);
  for (const n of v.verses) assert.ok(Number.isInteger(n) && n >= 1 && n <= 176, n);
  assert.ok(typeof v.quote === 'string' && [...v.quote].length <= 40, v.quote);
  assert.equal(typeof v.canonical, 'boolean');
}

async function main(client) {
  const messages = [{ role: 'user', content: 'Quote John 3:16.' }];
  const response_format = {
    type: 'json_schema',
    json_schema: { name: 'verse', schema: verseSchema, strict: true },
  };
  for (let seed = 0; seed < 6; ++seed) {
    const completion = await client.chat.completions.parse({
      model: 'shipped', messages, response_format, temperature: 1, seed,
    });
    const message = completion.choices[0].message;
    assert.equal(completion.choices[0].finish_reason, 'stop');
    checkVerse(message.parsed);
    assert.deepEqual(message.parsed, JSON.parse(message.content));
  }

  // Streamed: the client's stream helper assembles the message (it parses
  // only formats it built itself, from zod).
  const runner = client.chat.completions.stream({
    model: 'shipped', messages, response_format, temperature: 0,
  });
  const streamed = await runner.finalChatCompletion();
  checkVerse(JSON.parse(streamed.choices[0].message.content));
  const greedy = await client.chat.completions.parse({
    model: 'shipped', messages, response_format, temperature: 0,
  });
  assert.equal(streamed.choices[0].message.content, greedy.choices[0].message.content);

  // json_object: any object.
  const object = await client.chat.completions.create({
    model: 'shipped', messages, response_format: { type: 'json_object' }, temperature: 0,
    max_tokens: 200,
  });
  if (object.choices[0].finish_reason === 'stop') {
    const value = JSON.parse(object.choices[0].message.content);
    assert.equal(typeof value, 'object');
    assert.ok(value !== null && !Array.isArray(value));
  } else {
    assert.ok(object.choices[0].message.content.startsWith('{'));
  }

  // Tool calling: a forced call, its result sent back, and the answer.
  const tools = [{
    type: 'function',
    function: {
      name: 'verse',
      description: 'Looks a verse up',
      parameters: {
        type: 'object',
        properties: { book: { enum: ['John', 'Ruth'] },
                      chapter: { type: 'integer', minimum: 1, maximum: 50 } },
        required: ['book', 'chapter'],
        additionalProperties: false,
      },
    },
  }];
  const question = [{ role: 'user', content: 'Quote John 3.' }];
  const forced = await client.chat.completions.create({
    model: 'shipped', messages: question, tools, tool_choice: 'required',
    parallel_tool_calls: false, temperature: 1, seed: 3,
  });
  assert.equal(forced.choices[0].finish_reason, 'tool_calls');
  const message = forced.choices[0].message;
  assert.equal(message.content, null);
  assert.equal(message.tool_calls.length, 1);
  const call = message.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.match(call.id, /^call_[A-Za-z0-9]{24}$/);
  assert.equal(call.function.name, 'verse');
  const args = JSON.parse(call.function.arguments);
  assert.ok(['John', 'Ruth'].includes(args.book) && args.chapter >= 1 && args.chapter <= 50,
            call.function.arguments);
  const answer = await client.chat.completions.create({
    model: 'shipped', tools, temperature: 0, max_tokens: 16,
    messages: [...question, message,
               { role: 'tool', tool_call_id: call.id, content: 'For God so loved the world' }],
  });
  assert.ok(['stop', 'length'].includes(answer.choices[0].finish_reason));
  assert.equal(typeof answer.choices[0].message.content, 'string');

  // Streamed, naming the function: the client's helper assembles the call
  // from the deltas.
  const streamedCall = await client.chat.completions.stream({
    model: 'shipped', messages: question, tools, parallel_tool_calls: false,
    tool_choice: { type: 'function', function: { name: 'verse' } }, temperature: 1, seed: 3,
  }).finalChatCompletion();
  assert.equal(streamedCall.choices[0].finish_reason, 'tool_calls');
  const streamed_ = streamedCall.choices[0].message.tool_calls;
  assert.equal(streamed_.length, 1);
  assert.equal(streamed_[0].function.name, 'verse');
  assert.deepEqual(JSON.parse(streamed_[0].function.arguments), args);

  // A tool choice naming a missing function is a 400 naming the field.
  await assert.rejects(
    client.chat.completions.create({
      model: 'shipped', messages: question, tools,
      tool_choice: { type: 'function', function: { name: 'psalm' } },
    }),
    (error) => error.status === 400 && error.param === 'tool_choice');

  // A schema the server cannot follow is a 400 naming the field.
  await assert.rejects(
    client.chat.completions.create({
      model: 'shipped', messages,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { not: {} } } },
    }),
    (error) => error.status === 400 && error.param === 'response_format.json_schema.schema');
}

const { server, url } = await startServer(llmrun, bundle, '--threads', '2');
try {
  await main(new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 }));
  console.log('openai structured output: ok');
} finally {
  server.kill('SIGTERM');
}
