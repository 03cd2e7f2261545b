/**
 * docs/pod-fields.md from the field table (src/admission/podFields.ts):
 *   npx tsx scripts/podapi/doc.ts    writes it; test/admission/podFields.test.ts fails when it differs.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { POD_API_RELEASE, POD_API_TYPES } from '../../src/admission/podApi.ts';
import { POD_FIELDS, type FieldHandling } from '../../src/admission/podFields.ts';

export const DOC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../docs/pod-fields.md');
const ROOTS = ['PodSpec', 'Container', 'EphemeralContainer', 'Volume'];

/** The types whose fields the node reads: the roots and what their implemented fields hold, in walk order. */
export function readTypes(): string[] {
  const seen: string[] = [];
  const queue = [...ROOTS];
  while (queue.length > 0) {
    const type = queue.shift()!;
    if (seen.includes(type)) continue;
    seen.push(type);
    for (const [field, held] of Object.entries(POD_API_TYPES[type] ?? {})) {
      const handling = POD_FIELDS[type]?.[field];
      if (held !== null && handling !== undefined && 'implemented' in handling) queue.push(held);
    }
  }
  return seen;
}

function describe(handling: FieldHandling): [string, string] {
  if ('implemented' in handling) return ['implemented', handling.implemented];
  if ('controlPlane' in handling) return ['control plane', `not the node's business: ${handling.controlPlane}`];
  if (handling.at === 'mount') return ['refused at mount', `${handling.refused}; the pod waits in ContainerCreating, \`FailedMount\` "no volume plugin matched"`];
  if (handling.at === 'sandbox') return ['refused at pod start', `${handling.refused}; the pod stays Pending with no sandbox, \`FailedPrepareDynamicResources\` "Failed to prepare dynamic resources: …"`];
  const allowed = handling.allowed ? ` (accepted: ${handling.allowed.map((v) => (v === '' ? '""' : `\`${String(v)}\``)).join(', ')})` : '';
  return ['refused at admission', `${handling.refused}${allowed}`];
}

export function renderDoc(): string {
  const lines = [
    '# Pod fields: what this node does with each',
    '',
    `Every field of the pod API at Kubernetes ${POD_API_RELEASE} (\`PodSpec\`, \`Container\`, \`EphemeralContainer\`,`,
    '`Volume` and the types under them), with what statelet does with it. Generated from',
    '`src/admission/podFields.ts` by `npx tsx scripts/podapi/doc.ts`; `test/admission/podFields.test.ts` fails',
    'when a field of the release has no entry, and when this page differs from the table.',
    '',
    '- **implemented**: the node honours the field; the modules that do are named.',
    '- **control plane**: the scheduler, the API server or a controller acts on it, not a node; what is under it is not listed.',
    '- **refused at admission**: a pod setting it (to a value other than those accepted) is rejected when the node',
    '  admits it: phase `Failed`, reason `PodFeatureUnsupported`, message',
    '  `Pod was rejected: Pod requires node features that are not available: <field> (<why>)`. The node would',
    '  otherwise run the pod without what it asked for. What is under such a field is not listed.',
    '- **refused at mount**: a volume plugin this node does not have; as on a kubelet without the plugin, the pod',
    '  waits in `ContainerCreating` with a `FailedMount` event naming the volume.',
    '- **refused at pod start**: dynamic resource claims; as on a kubelet without the DRA driver, the pod gets no',
    '  sandbox and stays `Pending`, with a Warning `FailedPrepareDynamicResources` at each try.',
    '',
    'The pod\'s metadata and status are not in this table: the node reads the metadata it needs and writes the status.',
  ];
  for (const type of readTypes()) {
    lines.push('', `## ${type}`, '', '| field | handling | where, or why |', '|---|---|---|');
    for (const field of Object.keys(POD_API_TYPES[type] ?? {})) {
      const handling = POD_FIELDS[type]?.[field];
      const [kind, detail] = handling ? describe(handling) : ['**missing**', ''];
      lines.push(`| \`${field}\` | ${kind} | ${detail.replace(/\|/g, '\\|')} |`);
    }
  }
  return `${lines.join('\n')}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) writeFileSync(DOC, renderDoc());
