/**
 * `bin/statelet.js` in a checkout that has no build: it must run the TypeScript sources (through
 * tsx's register API, which works on Node 20.6+ and 24). The copy below has the checkout's
 * sources and modules but no dist/, so the test does not depend on whether this checkout was
 * built. The built path is what the package suite (packed.test.ts) runs.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { checkoutBinCommand } from '../support/agentProcess.ts';

const removals: (() => Promise<void>)[] = [];

afterAll(async () => {
  for (const remove of removals) await remove();
});

describe('bin/statelet.js without a build', () => {
  it('runs the sources through tsx', async () => {
    const checkout = await checkoutBinCommand();
    removals.push(checkout.remove);
    const { stdout } = await promisify(execFile)(process.execPath, [checkout.command.file, '--version']);
    expect(stdout.trim()).toMatch(/^Kubernetes v\d+\.\d+\.\d+-statelet\.\d+\.\d+\.\d+$/);
  });
});
