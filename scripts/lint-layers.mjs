#!/usr/bin/env node
// Keeps the layers honest: the statecharts and their pure decisions in src/machines must not
// reach for gRPC, the filesystem, the network or the Kubernetes client. Only the composition root
// (src/agent) picks real implementations.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const forbidden = [
  /^@grpc\//,
  /^@kubernetes\/client-node/,
  /^(node:)?(fs|fs\/promises|net|http|https|http2|child_process|dgram|tls)$/,
  /\/runtime\/cri\//,
  /\/runtime\/sim\//,
  /\/agent\//,
];
const importPattern = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

function* files(dir) {
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) yield* files(full);
    else if (full.endsWith('.ts')) yield full;
  }
}

const problems = [];
for (const file of files(path.join(root, 'src/machines'))) {
  const text = readFileSync(file, 'utf8');
  for (const match of text.matchAll(importPattern)) {
    const spec = match[1] ?? match[2];
    if (forbidden.some((rule) => rule.test(spec))) problems.push(`${path.relative(root, file)}: imports ${spec}`);
  }
}
if (problems.length) {
  console.error('src/machines must stay free of I/O and concrete implementations:');
  for (const p of problems) console.error(`  ${p}`);
  process.exit(1);
}
console.log('lint-layers: src/machines imports no gRPC, fs, network or client-node modules');
