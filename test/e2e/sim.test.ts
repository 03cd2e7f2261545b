import path from 'node:path';
import { defineAgentScenarios } from './scenarios.ts';

defineAgentScenarios({
  name: 'the simulated runtime (sim://)',
  image: 'statelet.local/busybox:1',
  endpoint: () => 'sim://',
  criEndpoint: (agent) => `unix://${path.join(agent.rootDir, 'sim.sock')}`,
});
