import path from 'node:path';
import { defineLifecycleScenarios } from './lifecycleScenarios.ts';
import { defineProbeScenarios } from './probeScenarios.ts';
import { type ScenarioRuntime, defineAgentScenarios } from './scenarios.ts';
import { defineSecurityScenarios } from './securityScenarios.ts';

const sim: ScenarioRuntime = {
  name: 'the simulated runtime (sim://)',
  image: 'statelet.local/busybox:1',
  endpoint: () => 'sim://',
  criEndpoint: (agent) => `unix://${path.join(agent.rootDir, 'sim.sock')}`,
};

defineAgentScenarios(sim);
defineLifecycleScenarios(sim);
defineProbeScenarios(sim);
defineSecurityScenarios(sim);
