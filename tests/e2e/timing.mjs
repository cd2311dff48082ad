// Compares the timing of two runs of the same experiment request by
// request: usage `node tests/e2e/timing.mjs A/records.jsonl B/records.jsonl`.
// For every arm it prints the p50 and p95 of TTFT and end-to-end time in
// each run, and the median, p95 and maximum of the per-request difference
// B − A (matched by arm, repeat and task id) with the share of requests
// within ±5 ms, plus the pass counts.
import { readFileSync } from 'node:fs';

function read(path) {
  const recs = new Map();
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const r = JSON.parse(line);
    recs.set(`${r.arm}\u0000${r.repeat}\u0000${r.task_id}`, r);
  }
  return recs;
}

// nearest rank, as crab reports: p_q = x[ceil(q·n/100)]
function pct(xs, q) {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s[Math.max(0, Math.ceil((q * s.length) / 100) - 1)];
}

const [, , pathA, pathB] = process.argv;
if (!pathA || !pathB) {
  console.error('usage: node timing.mjs A/records.jsonl B/records.jsonl');
  process.exit(2);
}
const a = read(pathA);
const b = read(pathB);
const arms = new Map();
for (const [key, ra] of a) {
  const rb = b.get(key);
  if (!rb) continue;
  if (!arms.has(ra.arm)) arms.set(ra.arm, { n: 0, passA: 0, passB: 0, ttftA: [], ttftB: [], e2eA: [], e2eB: [], dTTFT: [], dE2E: [] });
  const s = arms.get(ra.arm);
  s.n++;
  s.passA += ra.pass ? 1 : 0;
  s.passB += rb.pass ? 1 : 0;
  if (ra.outcome !== 'ok' || rb.outcome !== 'ok') continue; // timing of answers only
  s.ttftA.push(ra.ttft_ms); s.ttftB.push(rb.ttft_ms);
  s.e2eA.push(ra.e2e_ms); s.e2eB.push(rb.e2e_ms);
  s.dTTFT.push(rb.ttft_ms - ra.ttft_ms);
  s.dE2E.push(rb.e2e_ms - ra.e2e_ms);
}
const f = (x) => x.toFixed(1).padStart(7);
console.log('arm            n  pass A/B | TTFT p50 A      B   p95 A      B | e2e p50 A      B   p95 A      B | B−A per request (ms): TTFT med  p95  max  ≤5ms | e2e med  p95  max  ≤5ms');
const within = (xs) => `${Math.round((100 * xs.filter((x) => Math.abs(x) <= 5).length) / Math.max(xs.length, 1))}%`.padStart(5);
for (const [arm, s] of arms) {
  const absMax = (xs) => xs.reduce((m, x) => (Math.abs(x) > Math.abs(m) ? x : m), 0);
  console.log(
    `${arm.padEnd(12)} ${String(s.n).padStart(3)}  ${String(s.passA).padStart(3)}/${String(s.passB).padEnd(3)} |` +
    `${f(pct(s.ttftA, 50))}${f(pct(s.ttftB, 50))}${f(pct(s.ttftA, 95))}${f(pct(s.ttftB, 95))} |` +
    `${f(pct(s.e2eA, 50))}${f(pct(s.e2eB, 50))}${f(pct(s.e2eA, 95))}${f(pct(s.e2eB, 95))} |` +
    `             ${f(pct(s.dTTFT, 50))}${f(pct(s.dTTFT, 95))}${f(absMax(s.dTTFT))}${within(s.dTTFT)} |   ${f(pct(s.dE2E, 50))}${f(pct(s.dE2E, 95))}${f(absMax(s.dE2E))}${within(s.dE2E)}`,
  );
}
