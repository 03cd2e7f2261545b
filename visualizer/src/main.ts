/**
 * The visualizer page: a pod list fed by `/api/stream` (a `picture`, then `batch`es), and for the
 * selected pod its statechart (laid out by elkjs, active states highlighted) beside its event log.
 * DOM work is proportional to what changed: each batch marks the pods it touched, and one
 * animation frame updates only those rows (1,000 pods stay responsive).
 */
import type {
  WireActor,
  WireDefinition,
  WireEvent,
  WirePayload,
  WirePicture,
  WireRecord,
  WireSnapshot,
} from '../../src/visualizer/projection.ts';
import { activeStateIds, drawDefinition } from './chart.ts';

const maxEventsPerPod = 300;
const keepStoppedMs = 60_000;

interface PodEntry {
  actor: WireActor;
  key: string;
  snapshot?: WireSnapshot;
  events: WireEvent[];
  stoppedAt?: number;
  row: HTMLTableRowElement;
  cells: { name: HTMLTableCellElement; phase: HTMLTableCellElement; state: HTMLTableCellElement; syncs: HTMLTableCellElement };
}

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const rows = $<HTMLTableSectionElement>('pod-rows');
const search = $<HTMLInputElement>('search');
const statusEl = $('status');
const countsEl = $('counts');
const titleEl = $('pod-title');
const chartEl = $('chart');
const eventList = $<HTMLOListElement>('event-list');
const eventScroll = $('event-scroll');

const definitions = new Map<string, WireDefinition>();
const pods = new Map<string, PodEntry>();
/** Pods sorted by key (namespace/name, then actor id), mirroring the rows' order. */
const order: PodEntry[] = [];
const dirty = new Set<PodEntry>();
let selected: PodEntry | null = null;
let wantedKey = decodeURIComponent(location.hash.replace(/^#pod=/, '')) || null;
let filter = '';
let dropped = 0;
let frame = 0;

// --- the chart of the selected pod ---

let chart: { def: WireDefinition; groups: Map<string, SVGGElement>; active: Set<string> } | null = null;
let chartFor: WireDefinition | null = null;
let chartToken = 0;

async function ensureChart(def: WireDefinition | undefined): Promise<void> {
  if (!def) {
    chart = null;
    chartFor = null;
    chartEl.innerHTML = '<div class="empty">No definition for this machine yet.</div>';
    return;
  }
  if (chartFor === def) return;
  chartFor = def;
  const token = ++chartToken;
  chartEl.innerHTML = '<div class="empty">Laying out…</div>';
  try {
    const drawn = await drawDefinition(def);
    if (token !== chartToken) return;
    chartEl.replaceChildren(drawn.svg);
    chart = { def, groups: drawn.groups, active: new Set() };
    highlight();
  } catch (error) {
    if (token !== chartToken) return;
    chartEl.innerHTML = '';
    const div = document.createElement('div');
    div.className = 'empty';
    div.textContent = `Layout failed: ${String(error)}`;
    chartEl.append(div);
  }
}

function highlight(): void {
  if (!chart || !selected) return;
  const next = activeStateIds(chart.def.root, selected.snapshot?.value);
  for (const id of chart.active) if (!next.has(id)) chart.groups.get(id)?.classList.remove('active');
  for (const id of next) if (!chart.active.has(id)) chart.groups.get(id)?.classList.add('active');
  chart.active = next;
}

// --- the pod list ---

function stateText(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  const leaves: string[] = [];
  const walk = (v: unknown, key: string) => {
    if (typeof v === 'string') leaves.push(v);
    else if (v && typeof v === 'object') for (const [k, sub] of Object.entries(v)) walk(sub, k);
    else leaves.push(key);
  };
  const entries = Object.entries(value as Record<string, unknown>);
  return entries.map(([top, sub]) => {
    leaves.length = 0;
    walk(sub, top);
    return `${top}: ${leaves.join(' · ')}`;
  }).join(', ');
}

function setText(cell: HTMLElement, text: string): void {
  if (cell.textContent !== text) cell.textContent = text;
}

function keyOf(actor: WireActor): string {
  return actor.pod ? `${actor.pod.namespace}/${actor.pod.name}` : actor.name;
}

function matches(entry: PodEntry): boolean {
  return filter === '' || entry.key.toLowerCase().includes(filter);
}

function createEntry(actor: WireActor): PodEntry {
  const row = document.createElement('tr');
  row.dataset.actorId = actor.actorId;
  const cells = {
    name: document.createElement('td'),
    phase: document.createElement('td'),
    state: document.createElement('td'),
    syncs: document.createElement('td'),
  };
  cells.name.className = 'name';
  cells.state.className = 'state';
  row.append(cells.name, cells.phase, cells.state, cells.syncs);
  const entry: PodEntry = { actor, key: keyOf(actor), events: [], row, cells };
  row.dataset.pod = entry.key;
  cells.name.textContent = entry.key;
  cells.name.title = `${entry.key}\nuid ${actor.pod?.uid ?? '?'}\nactor ${actor.actorId}`;
  row.hidden = !matches(entry);
  // Insert in sorted position.
  const sortKey = `${entry.key}\u0000${actor.actorId}`;
  let lo = 0;
  let hi = order.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (`${order[mid]!.key}\u0000${order[mid]!.actor.actorId}` < sortKey) lo = mid + 1;
    else hi = mid;
  }
  rows.insertBefore(row, order[lo]?.row ?? null);
  order.splice(lo, 0, entry);
  pods.set(actor.actorId, entry);
  dirty.add(entry);
  return entry;
}

function removeEntry(entry: PodEntry): void {
  pods.delete(entry.actor.actorId);
  const i = order.indexOf(entry);
  if (i >= 0) order.splice(i, 1);
  entry.row.remove();
  dirty.delete(entry);
  if (selected === entry) select(null);
}

function renderRow(entry: PodEntry): void {
  const s = entry.snapshot;
  const phase = s?.pod?.phase ?? '';
  setText(entry.cells.phase, phase);
  const phaseClass = `phase-${phase}`;
  if (entry.cells.phase.className !== phaseClass) entry.cells.phase.className = phaseClass;
  setText(entry.cells.state, entry.stoppedAt ? `stopped (${stateText(s?.value)})` : stateText(s?.value));
  setText(entry.cells.syncs, `${s?.pod?.restarts ?? 0}${s?.pod?.restartRequested ? ' ↻' : ''}`);
  entry.row.classList.toggle('stopped', entry.stoppedAt !== undefined);
  entry.row.dataset.phase = phase;
}

function schedule(): void {
  if (!frame) frame = requestAnimationFrame(render);
}

function render(): void {
  frame = 0;
  for (const entry of dirty) renderRow(entry);
  if (selected && dirty.has(selected)) renderTitle();
  dirty.clear();
  if (!selected && wantedKey) {
    const found = order.find((e) => e.key === wantedKey && !e.stoppedAt) ?? order.find((e) => e.key === wantedKey);
    if (found) select(found);
  }
  highlight();
  const live = order.length - order.filter((e) => e.stoppedAt !== undefined).length;
  countsEl.textContent = `${live} pod${live === 1 ? '' : 's'}${dropped ? ` · ${dropped} events not streamed` : ''}`;
}

// --- the selected pod ---

function renderTitle(): void {
  if (!selected) {
    titleEl.innerHTML = '<span>Select a pod to see its statechart.</span>';
    return;
  }
  const s = selected.snapshot;
  const parts: [string, string][] = [
    ['phase', s?.pod?.phase ?? '?'],
    ['progress', s?.pod?.progress.stage ?? '?'],
    ['status', selected.stoppedAt ? 'stopped' : (s?.status ?? '?')],
    ['uid', selected.actor.pod?.uid ?? '?'],
  ];
  const strong = document.createElement('strong');
  strong.textContent = selected.key;
  const spans = parts.map(([k, v]) => {
    const span = document.createElement('span');
    span.textContent = `${k}: ${v}`;
    return span;
  });
  titleEl.replaceChildren(strong, ...spans);
}

function time(at: number): string {
  const d = new Date(at);
  return `${d.toTimeString().slice(0, 8)}.${String(d.getMilliseconds()).padStart(3, '0')}`;
}

function payloadText(payload: WirePayload | undefined): string {
  if (!payload) return '';
  return Object.entries(payload)
    .map(([k, v]) => {
      if (v !== null && typeof v === 'object') {
        const list = Array.isArray(v) ? v : [v];
        return `${k}=${list.map((p) => p.name).join(',')}`;
      }
      return `${k}=${String(v)}`;
    })
    .join(' ');
}

function eventItem(e: WireEvent): HTMLLIElement {
  const li = document.createElement('li');
  li.dataset.eventType = e.type;
  const t = document.createElement('time');
  t.textContent = time(e.at);
  const b = document.createElement('b');
  b.textContent = e.type;
  li.append(t, b);
  const text = payloadText(e.payload);
  if (text) {
    const span = document.createElement('span');
    span.className = 'payload';
    span.textContent = ` ${text}`;
    li.append(span);
  }
  return li;
}

function appendEvents(list: WireEvent[]): void {
  if (list.length) eventList.querySelector('.empty')?.remove();
  const atBottom = eventScroll.scrollTop + eventScroll.clientHeight >= eventScroll.scrollHeight - 8;
  const fragment = document.createDocumentFragment();
  for (const e of list) fragment.append(eventItem(e));
  eventList.append(fragment);
  while (eventList.childElementCount > maxEventsPerPod) eventList.firstElementChild?.remove();
  if (atBottom) eventScroll.scrollTop = eventScroll.scrollHeight;
}

function select(entry: PodEntry | null): void {
  if (selected === entry) return;
  selected?.row.classList.remove('selected');
  selected = entry;
  eventList.replaceChildren();
  if (chart) {
    for (const id of chart.active) chart.groups.get(id)?.classList.remove('active');
    chart.active = new Set();
  }
  renderTitle();
  if (!entry) {
    chartEl.replaceChildren();
    chart = null;
    chartFor = null;
    return;
  }
  wantedKey = entry.key;
  history.replaceState(null, '', `#pod=${encodeURIComponent(entry.key)}`);
  entry.row.classList.add('selected');
  if (!entry.events.length) {
    const li = document.createElement('li');
    li.className = 'empty';
    li.textContent = 'No events received for this pod since the page connected.';
    eventList.append(li);
  }
  appendEvents(entry.events);
  void ensureChart(definitions.get(entry.actor.machineId ?? 'pod')).then(highlight);
  highlight();
}

rows.addEventListener('click', (ev) => {
  const row = (ev.target as HTMLElement).closest('tr');
  const entry = row?.dataset.actorId ? pods.get(row.dataset.actorId) : undefined;
  if (entry) select(entry);
});

search.addEventListener('input', () => {
  filter = search.value.trim().toLowerCase();
  for (const entry of order) {
    const hidden = !matches(entry);
    if (entry.row.hidden !== hidden) entry.row.hidden = hidden;
  }
});

// --- the stream ---

function applyPicture(picture: WirePicture): void {
  definitions.clear();
  for (const d of picture.definitions) definitions.set(d.machineId, d);
  const seen = new Set<string>();
  for (const { actor, snapshot } of picture.actors) {
    if (actor.machineId !== 'pod') continue;
    seen.add(actor.actorId);
    const entry = pods.get(actor.actorId) ?? createEntry(actor);
    entry.actor = actor;
    entry.stoppedAt = undefined;
    if (snapshot) entry.snapshot = snapshot;
    dirty.add(entry);
  }
  for (const entry of [...order]) if (!seen.has(entry.actor.actorId)) removeEntry(entry);
  if (selected) {
    chartFor = null;
    void ensureChart(definitions.get(selected.actor.machineId ?? 'pod')).then(highlight);
  }
  schedule();
}

function applyBatch(batch: WireRecord[]): void {
  const forSelected: WireEvent[] = [];
  for (const r of batch) {
    switch (r.kind) {
      case 'definition':
        definitions.set(r.machineId, r);
        if (selected && (selected.actor.machineId ?? 'pod') === r.machineId) void ensureChart(r).then(highlight);
        break;
      case 'actor': {
        if (r.machineId !== 'pod') break;
        const entry = pods.get(r.actorId) ?? (r.op === 'created' ? createEntry(r) : undefined);
        if (!entry) break;
        if (r.op === 'stopped') entry.stoppedAt = Date.now();
        dirty.add(entry);
        break;
      }
      case 'snapshot': {
        const entry = pods.get(r.actorId);
        if (!entry) break;
        entry.snapshot = r;
        dirty.add(entry);
        break;
      }
      case 'event': {
        const entry = pods.get(r.actorId);
        if (!entry) break;
        entry.events.push(r);
        if (entry.events.length > maxEventsPerPod) entry.events.splice(0, entry.events.length - maxEventsPerPod);
        if (entry === selected) forSelected.push(r);
        break;
      }
      case 'dropped':
        dropped += r.events;
        break;
    }
  }
  if (forSelected.length) appendEvents(forSelected);
  schedule();
}

function setStatus(state: 'connecting' | 'live' | 'reconnecting', text: string): void {
  statusEl.dataset.state = state;
  statusEl.textContent = text;
}

function connect(): void {
  const source = new EventSource('api/stream');
  source.addEventListener('open', () => setStatus('live', 'live'));
  source.addEventListener('picture', (ev) => applyPicture(JSON.parse((ev as MessageEvent<string>).data) as WirePicture));
  source.addEventListener('batch', (ev) => applyBatch(JSON.parse((ev as MessageEvent<string>).data) as WireRecord[]));
  source.addEventListener('error', () => {
    setStatus('reconnecting', 'reconnecting…');
    // EventSource retries by itself unless it gave up (an HTTP error): then start over.
    if (source.readyState === EventSource.CLOSED) setTimeout(connect, 2000);
  });
}

setInterval(() => {
  const now = Date.now();
  for (const entry of [...order]) {
    if (entry.stoppedAt !== undefined && entry !== selected && now - entry.stoppedAt > keepStoppedMs) removeEntry(entry);
  }
}, 10_000);

connect();
