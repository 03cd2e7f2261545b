/**
 * Draws a machine definition as an SVG statechart laid out by elkjs: every state a box, compound
 * and parallel states nested boxes around their children, transitions as labelled edges. The
 * layout is computed once per definition; highlighting the active states only toggles classes.
 */
import ELK from 'elkjs/lib/elk.bundled.js';
import type { ElkExtendedEdge, ElkNode } from 'elkjs/lib/elk-api.js';
import type { WireDefinition, WireStateNode } from '../../src/visualizer/wire.ts';

const svgNs = 'http://www.w3.org/2000/svg';
const elk = new ELK();
const charWidth = 7.2;
const edgeCharWidth = 5.8;

/** A readable event type: `done: working` for `xstate.done.actor.0.pod.syncing.worker.working`, `after killRetry`, `created`. */
export function eventLabel(type: string): string {
  if (type === 'xstate.init') return 'created';
  const actor = /^xstate\.(done|error)\.actor\.[^.]*\.(.*)$/.exec(type);
  if (actor) return `${actor[1]}: ${actor[2]!.split('.').pop()}`;
  const after = /^xstate\.after\.([^.]+)\./.exec(type);
  if (after) return `after ${after[1]}`;
  return type;
}

/** A short label for a transition: `POD.KILL`, `done: working`, `after killRetry`, `always`. */
export function transitionLabel(event: string, guard?: string): string {
  let label = event === '' ? 'always' : eventLabel(event);
  if (guard && guard !== 'inline') label += ` [${guard.length > 28 ? `${guard.slice(0, 27)}…` : guard}]`;
  return label;
}

function toElkNode(node: WireStateNode, edges: ElkExtendedEdge[]): ElkNode {
  const byTargets = new Map<string, { source: string; target: string; labels: string[] }>();
  for (const t of node.transitions) {
    for (const target of t.targets) {
      const key = target;
      const entry = byTargets.get(key) ?? { source: node.id, target, labels: [] };
      const label = transitionLabel(t.event, t.guard);
      if (!entry.labels.includes(label)) entry.labels.push(label);
      byTargets.set(key, entry);
    }
  }
  for (const e of byTargets.values()) {
    const text = e.labels.length > 3 ? `${e.labels.slice(0, 3).join(', ')} +${e.labels.length - 3}` : e.labels.join(', ');
    edges.push({
      id: `e${edges.length}`,
      sources: [e.source],
      targets: [e.target],
      labels: [{ text, width: text.length * edgeCharWidth + 4, height: 13 }],
    });
  }
  const labelWidth = node.key.length * charWidth + 24;
  if (!node.states?.length) return { id: node.id, width: Math.max(72, labelWidth), height: 34 };
  return {
    id: node.id,
    layoutOptions: { 'elk.padding': '[top=30,left=14,bottom=14,right=14]' },
    children: node.states.map((child) => toElkNode(child, edges)),
  };
}

export interface Drawn {
  svg: SVGSVGElement;
  /** State node id → its group (`g.state`), for highlighting. */
  groups: Map<string, SVGGElement>;
  /** `edgeKey(source, target)` → its group (`g.edge`), for animating a transition taken. */
  edges: Map<string, SVGGElement>;
}

/** The key of the edge drawn from state node `source` to `target`. */
export const edgeKey = (source: string, target: string) => `${source}\u0000${target}`;

function el<K extends keyof SVGElementTagNameMap>(name: K, attrs: Record<string, string | number>): SVGElementTagNameMap[K] {
  const e = document.createElementNS(svgNs, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

function tooltip(node: WireStateNode): string {
  const lines = [`${node.id} (${node.type})`];
  if (node.tags?.length) lines.push(`tags: ${node.tags.join(', ')}`);
  if (node.entry?.length) lines.push(`entry: ${node.entry.join(', ')}`);
  if (node.exit?.length) lines.push(`exit: ${node.exit.join(', ')}`);
  if (node.invoke?.length) lines.push(`invoke: ${node.invoke.map((i) => `${i.id} (${i.src})`).join(', ')}`);
  const internal = node.transitions.filter((t) => t.targets.length === 0);
  if (internal.length) lines.push(`handles: ${[...new Set(internal.map((t) => transitionLabel(t.event, t.guard)))].join(', ')}`);
  return lines.join('\n');
}

/** Lays out and draws a definition; resolves with the SVG and its state groups. */
export async function drawDefinition(def: WireDefinition): Promise<Drawn> {
  const edges: ElkExtendedEdge[] = [];
  const graph: ElkNode = {
    id: '__root',
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': 'DOWN',
      'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
      'elk.json.edgeCoords': 'ROOT',
      'elk.json.shapeCoords': 'ROOT',
      'elk.layered.spacing.nodeNodeBetweenLayers': '36',
      'elk.spacing.nodeNode': '24',
      'elk.spacing.edgeLabel': '3',
      'elk.edgeRouting': 'ORTHOGONAL',
    },
    children: [toElkNode(def.root, edges)],
    edges,
  };
  const laid = await elk.layout(graph);
  const width = Math.ceil(laid.width ?? 400);
  const height = Math.ceil(laid.height ?? 300);
  // Natural size at most; scaled down to the panel's width by CSS (`max-width: 100%`).
  const svg = el('svg', { width, height, viewBox: `0 0 ${width} ${height}`, 'data-machine-id': def.machineId });
  const defs = el('defs', {});
  const marker = el('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' });
  marker.append(el('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#94a3b8' }));
  defs.append(marker);
  svg.append(defs);

  const groups = new Map<string, SVGGElement>();
  const wire = new Map<string, WireStateNode>();
  const index = (n: WireStateNode) => {
    wire.set(n.id, n);
    n.states?.forEach(index);
  };
  index(def.root);
  const initials = new Set<string>();
  for (const n of wire.values()) for (const id of n.initial ?? []) initials.add(id);

  const stateLayer = el('g', { class: 'states' });
  const drawNode = (n: ElkNode) => {
    const w = wire.get(n.id);
    if (!w) return;
    const g = el('g', { class: `state ${w.type}`, 'data-state-id': w.id });
    const x = n.x ?? 0;
    const y = n.y ?? 0;
    const atomic = !n.children?.length;
    g.append(el('rect', { x, y, width: n.width ?? 0, height: n.height ?? 0, rx: 8, ry: 8 }));
    const text = el('text', atomic ? { x: x + (n.width ?? 0) / 2, y: y + (n.height ?? 0) / 2 + 4, 'text-anchor': 'middle' } : { x: x + 12, y: y + 19 });
    text.textContent = w.key;
    g.append(text);
    if (initials.has(w.id)) g.append(el('circle', { class: 'initial', cx: x + 6, cy: y + 6, r: 3.5 }));
    const title = el('title', {});
    title.textContent = tooltip(w);
    g.append(title);
    stateLayer.append(g);
    groups.set(w.id, g);
    n.children?.forEach(drawNode);
  };
  laid.children?.forEach(drawNode);
  svg.append(stateLayer);

  const edgeLayer = el('g', { class: 'edges' });
  const edgeGroups = new Map<string, SVGGElement>();
  for (const e of laid.edges ?? []) {
    const g = el('g', { class: 'edge', 'data-source': e.sources[0] ?? '', 'data-target': e.targets[0] ?? '' });
    edgeGroups.set(edgeKey(e.sources[0] ?? '', e.targets[0] ?? ''), g);
    for (const s of e.sections ?? []) {
      const points = [s.startPoint, ...(s.bendPoints ?? []), s.endPoint];
      g.append(el('path', { d: points.map((p, i) => `${i ? 'L' : 'M'}${p.x},${p.y}`).join(' '), 'marker-end': 'url(#arrow)' }));
    }
    for (const l of e.labels ?? []) {
      const t = el('text', { x: l.x ?? 0, y: (l.y ?? 0) + 10 });
      t.textContent = l.text ?? '';
      g.append(t);
    }
    edgeLayer.append(g);
  }
  svg.append(edgeLayer);
  return { svg, groups, edges: edgeGroups };
}

/** The ids of all active state nodes (leaves and their ancestors) for a snapshot `value`. */
export function activeStateIds(root: WireStateNode, value: unknown): Set<string> {
  const out = new Set<string>();
  const walk = (node: WireStateNode, v: unknown) => {
    out.add(node.id);
    if (!node.states?.length || v === undefined || v === null) return;
    if (typeof v === 'string') {
      const child = node.states.find((c) => c.key === v);
      if (child) walk(child, undefined);
      return;
    }
    if (typeof v === 'object') {
      for (const [key, sub] of Object.entries(v as Record<string, unknown>)) {
        const child = node.states.find((c) => c.key === key);
        if (child) walk(child, sub);
      }
    }
  };
  walk(root, value);
  return out;
}
