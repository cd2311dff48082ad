// End-to-end test of `crab serve` in front of `crab sim-server`, driven by
// the official openai npm client. Run from the repository root:
//
//   (cd tests/e2e && npm ci) && node --test tests/e2e/
//
// It uses the crab binary named by CRAB_BIN, or builds one with `go build`.
// Every server listens on a free loopback port.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, copyFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';

const root = fileURLToPath(new URL('../..', import.meta.url));
// The simulated models answer from the contract itself (no expected
// answers reach them through serve), so an answer is checked against the
// contract's categories, not a particular one.
const categories = JSON.parse(readFileSync(join(root, 'fixtures', 'triage.schema.json'), 'utf8')).properties.category.enum;
const dir = mkdtempSync(join(tmpdir(), 'crab-e2e-'));
const children = [];
let proxyURL;

// start runs a crab command and resolves with the address it prints.
function start(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.env.CRAB_BIN, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    children.push(child);
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (s) => {
      stderr += s;
      const m = stderr.match(/listening on http:\/\/([0-9.:]+)\/v1/);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`crab ${args[0]} exited with ${code}: ${stderr}`)));
    child.stderrText = () => stderr;
  });
}

const ticketA = 'I was charged twice for my March invoice, please refund the duplicate payment.';
const ticketB = 'Since the update yesterday the mobile app crashes every time I open the reports tab.';

function client(apiKey = 'sk-e2e-acme') {
  return new OpenAI({ apiKey, baseURL: `http://${proxyURL}/v1`, maxRetries: 0, timeout: 20000 });
}

function messages(text) {
  return [
    { role: 'system', content: 'Triage the support ticket.' },
    { role: 'user', content: text },
  ];
}

before(async () => {
  if (!process.env.CRAB_BIN) {
    process.env.CRAB_BIN = join(dir, 'crab');
    const b = spawnSync('go', ['build', '-o', process.env.CRAB_BIN, '.'], { cwd: root, encoding: 'utf8' });
    assert.equal(b.status, 0, `go build: ${b.stderr}`);
  }
  const good = await start(['sim-server', '--listen', '127.0.0.1:0', '--time-scale', '0.05', '--seed', '42']);
  const broken = await start(['sim-server', '--listen', '127.0.0.1:0', '--time-scale', '0.05', '--malformed-rate', '1']);
  copyFileSync(join(root, 'fixtures', 'triage.schema.json'), join(dir, 'triage.schema.json'));
  writeFileSync(join(dir, 'keys.yaml'), [
    'keys:',
    '  - {key: sk-e2e-acme, tenant: acme, permission: agent, lang: en, doc_version: v2}',
    '',
  ].join('\n'));
  writeFileSync(join(dir, 'serve.yaml'), [
    'keys: keys.yaml',
    'timeout: 10s',
    'models:',
    `  - {name: small, base_url: "http://${good}/v1", price_in_per_mtok: 0.15, price_out_per_mtok: 0.6}`,
    `  - {name: large, base_url: "http://${good}/v1", price_in_per_mtok: 2.5, price_out_per_mtok: 10}`,
    `  - {name: flaky, base_url: "http://${broken}/v1", model: small}`,
    'default_model: large',
    'contract: {file: triage.schema.json, policy: fail}',
    'cache: {key: full, ttl: 10m}',
    'router: {threshold: 0.5, small: small, large: large}',
    '',
  ].join('\n'));
  proxyURL = await start(['serve', '--config', join(dir, 'serve.yaml'), '--listen', '127.0.0.1:0']);
});

after(async () => {
  // SIGTERM: each server stops accepting, finishes what is in flight and exits 0.
  const exits = children.map((c) => new Promise((resolve) => {
    if (c.exitCode !== null) return resolve(c.exitCode);
    c.removeAllListeners('exit');
    c.on('exit', (code) => resolve(code));
    c.kill('SIGTERM');
  }));
  const codes = await Promise.all(exits);
  assert.deepEqual(codes, children.map(() => 0), 'every crab process exits 0 on SIGTERM');
});

let answerA;
let answerB;

test('non-streaming call', async () => {
  const { data, response } = await client().chat.completions
    .create({ model: 'auto', messages: messages(ticketA) })
    .withResponse();
  assert.equal(response.status, 200);
  assert.equal(response.headers.get('x-crab-cache'), 'MISS');
  assert.equal(response.headers.get('x-crab-contract'), 'ok');
  assert.match(response.headers.get('x-crab-route-score'), /^0\.\d{3}$/);
  assert.ok(['small', 'large'].includes(response.headers.get('x-crab-model')));
  answerA = data.choices[0].message.content;
  const triage = JSON.parse(answerA);
  assert.ok(categories.includes(triage.category), `category ${triage.category} is one of the contract's`);
  assert.ok(data.usage.prompt_tokens > 0 && data.usage.completion_tokens > 0);
  assert.equal(data.choices[0].finish_reason, 'stop');
});

test('streaming call, content reassembled', async () => {
  const { data: stream, response } = await client().chat.completions
    .create({ model: 'auto', messages: messages(ticketB), stream: true, stream_options: { include_usage: true } })
    .withResponse();
  assert.equal(response.headers.get('x-crab-cache'), 'MISS');
  let content = '';
  let chunks = 0;
  let usage;
  let finish;
  for await (const chunk of stream) {
    chunks++;
    for (const c of chunk.choices) {
      content += c.delta?.content ?? '';
      finish = c.finish_reason ?? finish;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  assert.ok(chunks > 3, `got ${chunks} chunks`);
  assert.equal(finish, 'stop');
  assert.ok(usage && usage.completion_tokens > 0, 'a usage chunk arrives last');
  answerB = content;
  assert.ok(categories.includes(JSON.parse(content).category), 'the streamed answer reassembles into a contract answer');
});

test('cache hit on repeat, streamed or not, with the hit header', async () => {
  const { data, response } = await client().chat.completions
    .create({ model: 'auto', messages: messages(ticketA) })
    .withResponse();
  assert.equal(response.headers.get('x-crab-cache'), 'HIT');
  assert.equal(data.choices[0].message.content, answerA);

  const { data: stream, response: r2 } = await client().chat.completions
    .create({ model: 'auto', messages: messages(ticketB), stream: true })
    .withResponse();
  assert.equal(r2.headers.get('x-crab-cache'), 'HIT');
  let content = '';
  for await (const chunk of stream) content += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(content, answerB);
});

test('401 for a bad key', async () => {
  await assert.rejects(
    client('sk-wrong').chat.completions.create({ model: 'auto', messages: messages(ticketA) }),
    (err) => {
      assert.ok(err instanceof OpenAI.AuthenticationError, `got ${err}`);
      assert.equal(err.status, 401);
      assert.equal(err.code, 'invalid_api_key');
      return true;
    },
  );
});

test('contract-failing upstream output becomes a non-200 error', async () => {
  await assert.rejects(
    client().chat.completions.create({ model: 'flaky', messages: messages(ticketA) }),
    (err) => {
      assert.ok(err instanceof OpenAI.APIError, `got ${err}`);
      assert.equal(err.status, 502);
      assert.equal(err.code, 'contract_violation');
      assert.equal(err.headers.get('x-crab-contract'), 'fail');
      assert.match(err.message, /invalid_json/);
      return true;
    },
  );
});

test('request parameters are honoured or refused with a 400 naming them', async () => {
  const ticketC = 'Please add two more seats to our team plan before Monday.';
  const ok = await client().chat.completions.create({
    model: 'auto', messages: messages(ticketC), top_p: 0.5, stop: ['\n\n'], presence_penalty: 0.1,
    frequency_penalty: 0.1, logit_bias: { 50256: -100 }, seed: 7, user: 'u-1',
  });
  assert.ok(categories.includes(JSON.parse(ok.choices[0].message.content).category));
  const cases = [
    [{ n: 2 }, 'n', 'unsupported_value'],
    [{ foo_bar: 1 }, 'foo_bar', 'unsupported_parameter'],
    [{ tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }] }, 'tools', 'unsupported_parameter'],
    [{ response_format: { type: 'json_schema', json_schema: { name: 'one', schema: { type: 'object', properties: { x: { type: 'string' } } } } } }, 'response_format', 'unsupported_parameter'],
  ];
  for (const [extra, param, code] of cases) {
    await assert.rejects(
      client().chat.completions.create({ model: 'auto', messages: messages(ticketC), ...extra }),
      (err) => {
        assert.ok(err instanceof OpenAI.BadRequestError, `${param}: got ${err}`);
        assert.equal(err.param, param);
        assert.equal(err.code, code);
        assert.equal(err.type, 'invalid_request_error');
        return true;
      },
    );
  }
});

test('/metrics passes promtool check metrics when promtool is installed', async (t) => {
  const res = await fetch(`http://${proxyURL}/metrics`);
  assert.equal(res.status, 200);
  const text = await res.text();
  assert.match(text, /crab_serve_cache_hits_total 2/);
  assert.match(text, /crab_serve_contract_failures_total\{kind="invalid_json"\} 1/);
  const which = spawnSync('promtool', ['--version'], { encoding: 'utf8' });
  if (which.error) {
    t.skip('promtool is not installed');
    return;
  }
  const lint = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  assert.equal(lint.status, 0, `promtool check metrics: ${lint.stdout}${lint.stderr}`);
});
