// End-to-end test of `crab export --format parquet`: a quick run is
// exported, DuckDB (the @duckdb/node-api npm package, whose engine comes as
// a per-platform npm package) reads the file back, and its counts and sums
// per arm must be those of `crab report --format json` on the same run.
// Run from the repository root:
//
//   (cd tests/e2e && npm ci) && node --test tests/e2e/
//
// It uses the crab binary named by CRAB_BIN, or builds one with `go build`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'crab-export-'));
const run = join(dir, 'run');
const parquet = join(dir, 'records.parquet');
let crabBin;
let summary;
let instance;
let db;

// crab runs a crab command to completion and returns its stdout.
function crab(...args) {
  const r = spawnSync(crabBin, args, { encoding: 'utf8', maxBuffer: 64 << 20 });
  assert.ok(r.status === 0 || (args[0] === 'report' && r.status === 1),
    `crab ${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
  return r.stdout;
}

// query runs SQL and returns its rows as plain objects.
async function query(sql) {
  const reader = await db.runAndReadAll(sql);
  return reader.getRowObjectsJS();
}

before(async () => {
  crabBin = process.env.CRAB_BIN;
  if (!crabBin) {
    crabBin = join(dir, 'crab');
    const b = spawnSync('go', ['build', '-o', crabBin, '.'], { cwd: root, encoding: 'utf8' });
    assert.equal(b.status, 0, `go build: ${b.stderr}`);
  }
  // Simulated models at time scale 0, faults on, warm-up requests, a leaking
  // cache and a router: every kind of row and every figure compared below.
  writeFileSync(join(dir, 'quick.yaml'), [
    'name: export-e2e',
    'tasks: embedded:tasks.jsonl',
    'contract: embedded:triage.schema.json',
    'seed: 11',
    'warmup: 20',
    'time_scale: 0',
    'arrival: {pattern: burst}',
    'concurrency: 16',
    'timeout: 2s',
    'retry: {max_attempts: 2}',
    'models:',
    '  - {name: small, kind: small, price_in_per_mtok: 0.15, price_out_per_mtok: 0.6, faults: {error: 0.02, malformed: 0.02}}',
    '  - {name: large, kind: large, price_in_per_mtok: 2.5, price_out_per_mtok: 10, faults: {error: 0.02, malformed: 0.01}}',
    'arms:',
    '  - {name: baseline, model: large}',
    '  - {name: cache_naive, model: large, cache: {key: text, check_on_hit: false}}',
    '  - {name: router, router: {threshold: 0.5, small: small, large: large}}',
    '',
  ].join('\n'));
  crab('run', '-q', '-c', join(dir, 'quick.yaml'), '-o', run);
  crab('export', '-o', parquet, run);
  summary = JSON.parse(crab('report', '--format', 'json', run));
  instance = await DuckDBInstance.create(':memory:');
  db = await instance.connect();
  await db.run(`CREATE VIEW r AS SELECT * FROM read_parquet('${parquet.replaceAll("'", "''")}')`);
});

after(() => {
  db?.closeSync();
  instance?.closeSync();
});

test('the Parquet file is at least 10 times smaller than records.jsonl', (t) => {
  const jsonl = statSync(join(run, 'records.jsonl')).size;
  const pq = statSync(parquet).size;
  t.diagnostic(`records.jsonl ${jsonl} bytes, records.parquet ${pq} bytes (${(jsonl / pq).toFixed(1)}x smaller)`);
  assert.ok(pq * 10 <= jsonl, `records.parquet is ${pq} bytes, records.jsonl ${jsonl}: want at least 10x smaller`);
});

test('columns are typed', async () => {
  const types = Object.fromEntries((await query('DESCRIBE r')).map((c) => [c.column_name, c.column_type]));
  for (const [col, want] of Object.entries({
    arm: 'VARCHAR', task_id: 'VARCHAR', tenant: 'VARCHAR', repeat: 'INTEGER', attempts: 'INTEGER',
    tokens_in: 'BIGINT', e2e_ms: 'DOUBLE', cost: 'DOUBLE', route_score: 'DOUBLE', pass: 'BOOLEAN',
    warmup: 'BOOLEAN', contract_ok: 'BOOLEAN', violations: 'VARCHAR[]',
  })) {
    assert.equal(types[col], want, `column ${col}`);
  }
  assert.match(types.intended_at, /^TIMESTAMP/, 'column intended_at');
});

test('one row per request, warm-up ones marked', async () => {
  const [{ rows, warm }] = await query(
    'SELECT count(*)::INTEGER AS rows, count(*) FILTER (WHERE warmup)::INTEGER AS warm FROM r');
  const n = summary.arms.reduce((s, a) => s + a.n, 0);
  const warmup = summary.arms.reduce((s, a) => s + a.warmup, 0);
  assert.ok(warmup > 0, 'the run has warm-up requests');
  assert.equal(rows, n + warmup);
  assert.equal(warm, warmup);
});

test('counts and sums per arm match crab report', async () => {
  const got = Object.fromEntries((await query(`
    SELECT arm,
           count(*)::INTEGER AS n,
           count(*) FILTER (WHERE outcome = 'ok')::INTEGER AS ok,
           count(*) FILTER (WHERE pass)::INTEGER AS pass,
           sum(cost)::DOUBLE AS cost
    FROM r WHERE NOT warmup GROUP BY arm`)).map((r) => [r.arm, r]));
  assert.equal(Object.keys(got).length, summary.arms.length);
  for (const a of summary.arms) {
    const g = got[a.name];
    assert.ok(g, `arm ${a.name} in the Parquet file`);
    assert.deepEqual({ n: g.n, ok: g.ok, pass: g.pass }, { n: a.n, ok: a.ok, pass: a.pass }, `arm ${a.name}`);
    // The report drops only summation noise beyond the 12th digit.
    assert.ok(Math.abs(g.cost - a.cost) <= 1e-9 * Math.max(1, a.cost), `arm ${a.name}: cost ${g.cost} vs report ${a.cost}`);
  }
});

test('leaks and misroutes per kind match crab report', async () => {
  for (const [col, field] of [['leak', 'leaks'], ['misroute', 'misroutes']]) {
    const rows = await query(`
      SELECT arm, ${col} AS kind, count(*)::INTEGER AS n
      FROM r WHERE NOT warmup AND ${col} IS NOT NULL GROUP BY ALL`);
    const got = {};
    for (const r of rows) (got[r.arm] ??= {})[r.kind] = r.n;
    const want = {};
    for (const a of summary.arms) {
      for (const [kind, n] of Object.entries(a[field] ?? {})) if (n > 0) (want[a.name] ??= {})[kind] = n;
    }
    assert.ok(Object.keys(want).length > 0, `the run has ${field}`);
    assert.deepEqual(got, want, field);
  }
});
