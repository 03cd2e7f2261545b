import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DOC, renderDoc } from '../../scripts/kubeletconfig/doc.ts';
// @ts-expect-error: a plain JavaScript module without declarations
import { GENERATED, generate } from '../../scripts/kubeletconfig/extract.mjs';

describe('docs/kubelet-config.md and the generated release tables', () => {
  it('is what the tables say, with a status for every field', () => {
    const text = renderDoc();
    expect(text).not.toContain('NO STATUS');
    expect(readFileSync(DOC, 'utf8'), 'run npx tsx scripts/kubeletconfig/doc.ts').toBe(text);
  });

  // Running the extraction builds a Go program against the release (seconds with a warm build
  // cache, minutes without); CI has the release's module and the cache from the control plane build.
  it('src/cli/kubeletConfigApi.ts is what the pinned release gives', { timeout: 900_000 }, () => {
    if (!existsSync('/usr/local/go/bin/go')) {
      if (process.env.CI) throw new Error('Go is missing on CI: the kubelet configuration extraction cannot be checked');
      console.warn('\n*** SKIPPED: checking src/cli/kubeletConfigApi.ts against the release needs Go at /usr/local/go/bin ***\n');
      return;
    }
    expect(readFileSync(GENERATED, 'utf8'), 'run node scripts/kubeletconfig/extract.mjs').toBe(generate());
  });
});
