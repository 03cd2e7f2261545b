/** The agent process's own limits at start (server.go run): both set; a failure logged in the kubelet's words, the start going on. */
import { describe, expect, it } from 'vitest';
import { applyProcessLimits } from '../../src/node/processLimits.ts';

describe('applyProcessLimits', () => {
  it('sets the OOM score adjustment and the open file limit', async () => {
    const set: string[] = [];
    await applyProcessLimits({ oomScoreAdj: -999, maxOpenFiles: 1_000_000 }, () => {}, { oomScoreAdj: async (v) => void set.push(`oom ${v}`), openFiles: async (v) => void set.push(`nofile ${v}`) });
    expect(set).toEqual(['oom -999', 'nofile 1000000']);
  });

  it('logs what it could not set, and goes on', async () => {
    const lines: string[] = [];
    const refused = async () => {
      throw new Error('EACCES: permission denied');
    };
    await applyProcessLimits({ oomScoreAdj: -999, maxOpenFiles: 1_000_000 }, (level, message, fields) => void lines.push(`${level} ${message} ${String(fields?.['err'])}`), { oomScoreAdj: refused, openFiles: refused });
    expect(lines).toEqual(['info Failed to ApplyOOMScoreAdj EACCES: permission denied', 'error Failed to set rlimit on max file handles EACCES: permission denied']);
  });
});
