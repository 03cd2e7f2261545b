#!/usr/bin/env node
// Summarizes V8 CPU profiles of the built agent (`BENCH_AGENT_NODE_FLAGS="--cpu-prof --cpu-prof-dir=DIR"`
// with bench/agent.ts): self time by source file or package and by function, mapped back through
// the bundle's source maps (dist/*.js.map) to src/ and node_modules/. Idle time is left out.
//   node bench/profile-summary.mjs DIR [files=45] [functions=50]
//   WINDOW=9,27 node bench/profile-summary.mjs DIR      only the samples 9 s to 27 s after the profile began
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';
const dir = process.argv[2]; const [w0, w1] = (process.env.WINDOW ?? '0,1e9').split(',').map(Number);
const maps = new Map();
function mapOf(url) {
  if (!url.startsWith('file://')) return null;
  if (!maps.has(url)) { const f = fileURLToPath(url) + '.map'; maps.set(url, existsSync(f) ? new SourceMap(JSON.parse(readFileSync(f, 'utf8'))) : null); }
  return maps.get(url);
}
const byFn = new Map(), byFile = new Map(); let total = 0;
for (const f of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
  const p = JSON.parse(readFileSync(`${dir}/${f}`, 'utf8'));
  const self = new Map();
  let clock = 0;
  for (let i = 0; i < p.samples.length; i++) { clock += p.timeDeltas[i] ?? 0; if (clock / 1e6 < w0 || clock / 1e6 >= w1) continue; self.set(p.samples[i], (self.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0)); }
  for (const n of p.nodes) {
    const t = (self.get(n.id) ?? 0) / 1000; if (!t) continue;
    const cf = n.callFrame; if (cf.functionName === '(idle)') continue;
    total += t;
    let where = cf.url || '(native)';
    const m = mapOf(cf.url);
    if (m) { const e = m.findEntry(cf.lineNumber, cf.columnNumber); if (e && e.originalSource) where = `${e.originalSource.replace(/^.*?(node_modules\/|src\/)/, '$1')}:${e.originalLine + 1}`; }
    const file = where.replace(/:\d+$/, '');
    const pkg = file.startsWith('node_modules/') ? file.split('/').slice(1, file.split('/')[1].startsWith('@') ? 3 : 2).join('/') : file.startsWith('src/') ? file : file;
    byFn.set(`${cf.functionName || '(anon)'} ${where}`, (byFn.get(`${cf.functionName || '(anon)'} ${where}`) ?? 0) + t);
    byFile.set(pkg, (byFile.get(pkg) ?? 0) + t);
  }
}
const top = (m, n) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `${v.toFixed(0).padStart(7)} ms ${(100 * v / total).toFixed(1).padStart(5)}%  ${k}`).join('\n');
console.log(`non-idle ${total.toFixed(0)} ms\n-- by file/package\n${top(byFile, Number(process.argv[3] ?? 45))}\n-- by function\n${top(byFn, Number(process.argv[4] ?? 50))}`);
