/**
 * The visualizer page: fed by `/api/stream` (a `picture`, then `batch`es). Left, the system actors
 * (syncLoop, PLEG) and the pod list with search and a phase filter; middle, the selected actor's
 * statechart with its transitions played back (chartView.ts), and for the syncLoop its routing
 * counts; right, its event log (eventLog.ts).
 *
 * DOM work is proportional to what changed: each batch marks the actors it touched, and one
 * animation frame updates only their rows, so 1,000 churning pods stay responsive.
 */
import type { WireActor, WireDefinition, WirePicture, WireRecord, WireSnapshot, WireStep } from '../../src/visualizer/wire.ts';
import { ChartView } from './chartView.ts';
import { EventLog, type LogRecord, maxLogLines } from './eventLog.ts';

const keepStoppedMs = 60_000;

interface Entry {
  actor: WireActor;
  /** Pods go to the pod list; other machine actors (syncLoop, pleg) to the system list. */
  kind: 'pod' | 'system';
  key: string;
  snapshot?: WireSnapshot;
  log: LogRecord[];
  /** The agent's history of this actor was fetched (once per entry, on its first selection). */
  historyLoaded?: boolean;
  stoppedAt?: number;
  /** A `div.pod-row` of spans in the pod list; a `tr` in the system list. */
  row: HTMLElement;
  cells: HTMLElement[];
}

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const podRows = $<HTMLDivElement>('pod-rows');
const systemRows = $<HTMLTableSectionElement>('system-rows');
const search = $<HTMLInputElement>('search');
const showTimers = $<HTMLInputElement>('show-timers');
const phaseFilter = $<HTMLSelectElement>('phase-filter');
const statusEl = $('status');
const countsEl = $('counts');
const titleEl = $('title');
const routingEl = $('routing');
const logsEl = $('logs');
const logsBodyEl = $('logs-body');
const chartView = new ChartView($('chart'), $('step-line'));
const eventLog = new EventLog($<HTMLOListElement>('event-list'), $('event-scroll'));

const nodePicker = $<HTMLSelectElement>('node');

/** The node this page shows (`?node=`; the server's first when absent), for a process with several (`statelet --nodes`). */
const shownNode = new URLSearchParams(location.search).get('node');

/** An API path of the node shown. */
function api(pathAndQuery: string): string {
  if (shownNode === null) return pathAndQuery;
  return `${pathAndQuery}${pathAndQuery.includes('?') ? '&' : '?'}node=${encodeURIComponent(shownNode)}`;
}

/** With several nodes, the picker lists them; picking one loads the page for it. */
async function listNodes(): Promise<void> {
  const res = await fetch('api/nodes', { cache: 'no-store' });
  if (!res.ok) return;
  const names = (await res.json()) as string[];
  if (names.length < 2) return;
  nodePicker.replaceChildren(...names.map((name) => new Option(name, name, false, name === (shownNode ?? names[0]))));
  nodePicker.hidden = false;
  // Several tabs, one per node, tell themselves apart by their titles.
  document.title = `${nodePicker.value} — ${document.title}`;
  nodePicker.onchange = () => {
    location.search = `?node=${encodeURIComponent(nodePicker.value)}`;
  };
}

const definitions = new Map<string, WireDefinition>();
const entries = new Map<string, Entry>();
/** Pods sorted by key (namespace/name, then actor id), mirroring the rows' order. */
const podOrder: Entry[] = [];
const dirty = new Set<Entry>();
let selected: Entry | null = null;
let wanted = parseHash();
let textFilter = '';
let dropped = 0;
let frame = 0;
let hubId = '';

function parseHash(): { kind: Entry['kind']; key: string } | null {
  const m = /^#(pod|actor)=(.*)$/.exec(location.hash);
  return m ? { kind: m[1] === 'pod' ? 'pod' : 'system', key: decodeURIComponent(m[2]!) } : null;
}

// --- rows ---

function stateText(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  const leaves: string[] = [];
  const walk = (v: unknown, key: string) => {
    if (typeof v === 'string') leaves.push(v);
    else if (v && typeof v === 'object') for (const [k, sub] of Object.entries(v)) walk(sub, k);
    else leaves.push(key);
  };
  return Object.entries(value as Record<string, unknown>)
    .map(([top, sub]) => {
      leaves.length = 0;
      walk(sub, top);
      return `${top}: ${leaves.join(' · ')}`;
    })
    .join(', ');
}

function setText(cell: HTMLElement, text: string): void {
  if (cell.textContent !== text) cell.textContent = text;
}

/** What the phase filter matches: a phase, or `terminating` (tags), or `restarted`. */
function phaseMatches(entry: Entry, wantedPhase: string): boolean {
  if (wantedPhase === '') return true;
  const s = entry.snapshot;
  if (wantedPhase === 'terminating') return (s?.tags ?? []).some((t) => t === 'terminating' || t === 'terminated');
  if (wantedPhase === 'restarted') return (s?.pod?.restarts ?? 0) > 0;
  return s?.pod?.phase === wantedPhase;
}

function matches(entry: Entry): boolean {
  return (textFilter === '' || entry.key.toLowerCase().includes(textFilter)) && phaseMatches(entry, phaseFilter.value);
}

function sortKey(entry: Entry): string {
  return `${entry.key}\u0000${entry.actor.actorId}`;
}

function createEntry(actor: WireActor): Entry {
  const kind = actor.machineId === 'pod' ? 'pod' : 'system';
  const key = actor.pod ? `${actor.pod.namespace}/${actor.pod.name}` : actor.name;
  const row = document.createElement(kind === 'pod' ? 'div' : 'tr');
  const cells = Array.from({ length: kind === 'pod' ? 5 : 3 }, () => document.createElement(kind === 'pod' ? 'span' : 'td'));
  if (kind === 'pod') {
    row.className = 'pod-row';
    row.setAttribute('role', 'row');
  }
  cells[0]!.className = 'name';
  cells[0]!.textContent = key;
  cells[0]!.title = `${key}${actor.pod ? `\nuid ${actor.pod.uid}` : ''}\nactor ${actor.actorId}`;
  cells[kind === 'pod' ? 3 : 1]!.className = 'state';
  if (kind === 'pod') cells[2]!.className = 'qos';
  row.append(...cells);
  row.dataset.actorId = actor.actorId;
  const entry: Entry = { actor, kind, key, log: [], row, cells };
  if (kind === 'pod') {
    row.dataset.pod = key;
    row.hidden = !matches(entry);
    let lo = 0;
    let hi = podOrder.length;
    const k = sortKey(entry);
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (sortKey(podOrder[mid]!) < k) lo = mid + 1;
      else hi = mid;
    }
    podRows.insertBefore(row, podOrder[lo]?.row ?? null);
    podOrder.splice(lo, 0, entry);
  } else {
    row.dataset.actor = key;
    systemRows.append(row);
  }
  entries.set(actor.actorId, entry);
  dirty.add(entry);
  return entry;
}

function removeEntry(entry: Entry): void {
  entries.delete(entry.actor.actorId);
  const i = podOrder.indexOf(entry);
  if (i >= 0) podOrder.splice(i, 1);
  entry.row.remove();
  dirty.delete(entry);
  if (selected === entry) select(null);
}

function totalRouted(s: WireSnapshot | undefined): number {
  return Object.values(s?.syncLoop?.routed ?? {}).reduce((a, b) => a + b, 0);
}

/** `1,234 routed · api: watching from 5678`: what the syncLoop routed, and how its sources are doing. */
function syncLoopSummary(s: WireSnapshot): string {
  const sources = Object.entries(s.syncLoop?.sourceStates ?? {}).map(([source, state]) => `${source}: ${state}`);
  return [`${totalRouted(s).toLocaleString()} routed`, ...sources].join(' · ');
}

function renderRow(entry: Entry): void {
  const s = entry.snapshot;
  const state = entry.stoppedAt ? `stopped (${stateText(s?.value)})` : stateText(s?.value);
  entry.row.classList.toggle('stopped', entry.stoppedAt !== undefined);
  if (entry.kind === 'system') {
    setText(entry.cells[1]!, state);
    if (entry.cells[1]!.title !== state) entry.cells[1]!.title = state;
    const summary = s?.syncLoop ? syncLoopSummary(s) : (s?.summary ?? '');
    setText(entry.cells[2]!, summary);
    if (entry.cells[2]!.title !== summary) entry.cells[2]!.title = summary;
    return;
  }
  const [, phaseCell, qosCell, stateCell, restartsCell] = entry.cells as [HTMLElement, HTMLElement, HTMLElement, HTMLElement, HTMLElement];
  const phase = s?.pod?.phase ?? '';
  setText(phaseCell, phase);
  const phaseClass = `phase-${phase}`;
  if (phaseCell.className !== phaseClass) phaseCell.className = phaseClass;
  setText(qosCell, s?.pod?.qos ?? '');
  const limits = s?.pod?.limits ? `limits: ${s.pod.limits}` : 'no CPU or memory limit';
  if (qosCell.title !== limits) qosCell.title = limits;
  setText(stateCell, state);
  setText(restartsCell, `${s?.pod?.restarts ?? 0}${s?.pod?.restartRequested ? ' ↻' : ''}`);
  entry.row.dataset.phase = phase;
  const hidden = !matches(entry);
  if (entry.row.hidden !== hidden) entry.row.hidden = hidden;
}

function applyFilters(): void {
  textFilter = search.value.trim().toLowerCase();
  for (const entry of podOrder) {
    const hidden = !matches(entry);
    if (entry.row.hidden !== hidden) entry.row.hidden = hidden;
  }
  renderCounts();
}

function renderCounts(): void {
  let live = 0;
  let shown = 0;
  for (const e of podOrder) {
    if (e.stoppedAt === undefined) live++;
    if (!e.row.hidden) shown++;
  }
  const filtered = shown !== podOrder.length ? ` · ${shown} shown` : '';
  countsEl.textContent = `${live} pod${live === 1 ? '' : 's'}${filtered}${dropped ? ` · ${dropped} events not streamed` : ''}`;
}

function schedule(): void {
  if (!frame) frame = requestAnimationFrame(render);
}

function render(): void {
  frame = 0;
  for (const entry of dirty) renderRow(entry);
  if (selected && dirty.has(selected)) renderDetail();
  dirty.clear();
  if (!selected && wanted) {
    const candidates = [...entries.values()].filter((e) => e.kind === wanted!.kind && e.key === wanted!.key);
    const found = candidates.find((e) => !e.stoppedAt) ?? candidates[0];
    if (found) select(found);
  }
  renderCounts();
}

// --- the selected actor ---

function renderDetail(): void {
  if (!selected) {
    titleEl.innerHTML = '<span>Select a pod (or the syncLoop) to see its statechart.</span>';
    routingEl.hidden = true;
    return;
  }
  const s = selected.snapshot;
  const parts: [string, string][] =
    selected.kind === 'pod'
      ? [
          ['phase', s?.pod?.phase ?? '?'],
          ['progress', s?.pod?.progress.stage ?? '?'],
          ['syncs', String(s?.pod?.syncCount ?? 0)],
          ['qos', s?.pod?.qos ?? '?'],
          ['limits', s?.pod?.limits || 'none'],
          ['uid', selected.actor.pod?.uid ?? '?'],
        ]
      : [['machine', selected.actor.machineId ?? '?']];
  parts.push(['status', selected.stoppedAt ? 'stopped' : (s?.status ?? '?')]);
  const strong = document.createElement('strong');
  strong.textContent = selected.key;
  const spans = parts.map(([k, v]) => {
    const span = document.createElement('span');
    span.textContent = `${k}: ${v}`;
    return span;
  });
  const extra: HTMLElement[] = [];
  if (selected.kind === 'pod' && selected.actor.pod) {
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = 'logs';
    button.title = 'The last 100 lines of each container, as kubectl logs reads them';
    const pod = selected.actor.pod;
    button.addEventListener('click', () => void showLogs(pod));
    extra.push(button);
  }
  titleEl.replaceChildren(strong, ...spans, ...extra);
  renderRouting(s);
}

// --- a pod's log tail (GET /api/logs: the agent's own log reader) ---

let logsFor: { namespace: string; name: string } | null = null;

async function showLogs(pod: { namespace: string; name: string }): Promise<void> {
  logsFor = pod;
  logsEl.hidden = false;
  logsBodyEl.textContent = 'loading…';
  let tails: { container: string; text?: string; error?: string }[];
  try {
    const res = await fetch(api(`api/logs?namespace=${encodeURIComponent(pod.namespace)}&name=${encodeURIComponent(pod.name)}`), { cache: 'no-store' });
    if (!res.ok) throw new Error(await res.text());
    tails = (await res.json()) as typeof tails;
  } catch (err) {
    if (logsFor === pod) logsBodyEl.textContent = `no logs: ${err instanceof Error ? err.message : String(err)}`;
    return;
  }
  if (logsFor !== pod) return;
  logsBodyEl.replaceChildren(
    ...tails.flatMap((tail) => {
      const heading = document.createElement('h3');
      heading.textContent = tail.container;
      const body = document.createElement('pre');
      body.textContent = tail.error ?? (tail.text || '(empty)');
      if (tail.error) body.className = 'muted';
      return [heading, body];
    }),
  );
}

$('logs-refresh').addEventListener('click', () => {
  if (logsFor) void showLogs(logsFor);
});
$('logs-close').addEventListener('click', () => {
  logsFor = null;
  logsEl.hidden = true;
});

/** The syncLoop's routing counts per event type, and what it knows of sources and the runtime. */
function renderRouting(s: WireSnapshot | undefined): void {
  const loop = s?.syncLoop;
  routingEl.hidden = !loop;
  if (!loop) return;
  const rows = Object.entries(loop.routed).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const table = document.createElement('table');
  table.innerHTML = '<thead><tr><th>Routed to pods</th><th class="num">events</th></tr></thead>';
  const body = document.createElement('tbody');
  for (const [type, count] of rows) {
    const tr = document.createElement('tr');
    tr.dataset.routed = type;
    const name = document.createElement('td');
    name.textContent = type;
    const n = document.createElement('td');
    n.className = 'num';
    n.textContent = count.toLocaleString();
    tr.append(name, n);
    body.append(tr);
  }
  if (!rows.length) body.innerHTML = '<tr><td colspan="2" class="muted">nothing routed yet</td></tr>';
  table.append(body);
  const facts = document.createElement('p');
  facts.className = 'facts';
  const relist = loop.lastRelistDurationMs !== null ? `last relist ${loop.lastRelistDurationMs.toFixed(0)} ms` : 'no relist yet';
  facts.textContent = `sources seen: ${loop.seenSources.join(', ') || 'none'} · ${relist}${loop.lastRuntimeError ? ` · runtime: ${loop.lastRuntimeError}` : ''}`;
  routingEl.replaceChildren(table, facts);
}

function select(entry: Entry | null): void {
  if (selected === entry) return;
  selected?.row.classList.remove('selected');
  selected = entry;
  // Another actor: the open log tail was the previous pod's.
  logsFor = null;
  logsEl.hidden = true;
  renderDetail();
  if (!entry) {
    chartView.clear();
    eventLog.clear();
    return;
  }
  wanted = { kind: entry.kind, key: entry.key };
  history.replaceState(null, '', `#${entry.kind === 'pod' ? 'pod' : 'actor'}=${encodeURIComponent(entry.key)}`);
  entry.row.classList.add('selected');
  eventLog.reset(entry.log, 'No events recorded for this actor yet.');
  void chartView.show(definitions.get(entry.actor.machineId ?? ''), entry.snapshot?.value);
  if (!entry.historyLoaded && !entry.stoppedAt) void loadHistory(entry);
}

/**
 * Merges what the agent kept of the actor's recent past (its newest events and steps) into what
 * the page received: on its first selection, what happened before the page connected; after a
 * batch that dropped records, what the stream left out. Records are told apart by the hub's
 * sequence number.
 */
async function loadHistory(entry: Entry): Promise<void> {
  entry.historyLoaded = true;
  let records: LogRecord[];
  try {
    const res = await fetch(api(`api/history?actor=${encodeURIComponent(entry.actor.actorId)}`));
    if (!res.ok) return;
    records = (await res.json()) as LogRecord[];
  } catch {
    entry.historyLoaded = false;
    return;
  }
  const known = new Set(entry.log.map((r) => r.seq));
  const missing = records.filter((r) => !known.has(r.seq));
  if (!missing.length) return;
  entry.log.push(...missing);
  entry.log.sort((a, b) => a.seq - b.seq);
  if (selected === entry) eventLog.reset(entry.log, '');
}

/** At most one gap-filling history request per second. */
let lastGapFill = 0;

function onRowClick(ev: MouseEvent): void {
  const row = (ev.target as HTMLElement).closest<HTMLElement>('[data-actor-id]');
  const entry = row?.dataset.actorId ? entries.get(row.dataset.actorId) : undefined;
  if (entry) select(entry);
}
podRows.addEventListener('click', onRowClick);
systemRows.addEventListener('click', onRowClick);
search.addEventListener('input', applyFilters);
showTimers.addEventListener('change', () => {
  eventLog.showTimers = showTimers.checked;
  if (selected) eventLog.reset(selected.log, 'No events recorded for this actor yet.');
});
phaseFilter.addEventListener('change', applyFilters);

// --- the stream ---

/** Machine actors the page lists: pods, and the other machines (syncLoop, pleg). */
const listed = (actor: WireActor) => actor.machineId !== null;

function applyPicture(picture: WirePicture): void {
  // Another agent (it restarted): its actor ids and sequence numbers start over, so nothing carries over.
  if (picture.hubId !== hubId) for (const entry of [...entries.values()]) removeEntry(entry);
  hubId = picture.hubId;
  definitions.clear();
  for (const d of picture.definitions) {
    definitions.set(d.machineId, d);
    chartView.prepare(d);
  }
  const seen = new Set<string>();
  for (const { actor, snapshot } of picture.actors) {
    if (!listed(actor)) continue;
    seen.add(actor.actorId);
    const entry = entries.get(actor.actorId) ?? createEntry(actor);
    entry.actor = actor;
    entry.stoppedAt = undefined;
    if (snapshot) entry.snapshot = snapshot;
    dirty.add(entry);
  }
  for (const entry of [...entries.values()]) if (!seen.has(entry.actor.actorId)) removeEntry(entry);
  if (selected) {
    chartView.forget();
    void chartView.show(definitions.get(selected.actor.machineId ?? ''), selected.snapshot?.value);
    // Back on the same agent after a break: fill the log with what the break missed.
    void loadHistory(selected);
  }
  schedule();
}

function keep(entry: Entry, record: LogRecord): void {
  entry.log.push(record);
  if (entry.log.length > 2 * maxLogLines) entry.log.splice(0, entry.log.length - maxLogLines);
}

function applyBatch(batch: WireRecord[]): void {
  const forSelected: LogRecord[] = [];
  const steps: WireStep[] = [];
  let droppedNow = false;
  for (const r of batch) {
    switch (r.kind) {
      case 'definition':
        definitions.set(r.machineId, r);
        chartView.prepare(r);
        if (selected && selected.actor.machineId === r.machineId) void chartView.show(r, selected.snapshot?.value);
        break;
      case 'actor': {
        if (!listed(r)) break;
        const entry = entries.get(r.actorId) ?? (r.op === 'created' ? createEntry(r) : undefined);
        if (!entry) break;
        if (r.op === 'stopped') entry.stoppedAt = Date.now();
        dirty.add(entry);
        break;
      }
      case 'snapshot': {
        const entry = entries.get(r.actorId);
        if (!entry) break;
        entry.snapshot = r;
        dirty.add(entry);
        break;
      }
      case 'event':
      case 'step': {
        const entry = entries.get(r.actorId);
        if (!entry) break;
        keep(entry, r);
        if (entry !== selected) break;
        forSelected.push(r);
        if (r.kind === 'step') steps.push(r);
        break;
      }
      case 'dropped':
        dropped += r.events;
        droppedNow = true;
        break;
    }
  }
  if (selected) {
    eventLog.append(forSelected);
    chartView.play(steps);
    chartView.setValue(selected.snapshot?.value);
    if (droppedNow && !selected.stoppedAt && Date.now() - lastGapFill >= 1_000) {
      lastGapFill = Date.now();
      void loadHistory(selected);
    }
  }
  schedule();
}

function setStatus(state: 'connecting' | 'live' | 'reconnecting', text: string): void {
  statusEl.dataset.state = state;
  statusEl.textContent = text;
}

function connect(): void {
  const source = new EventSource(api('api/stream'));
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
  for (const entry of [...entries.values()]) {
    if (entry.stoppedAt !== undefined && entry !== selected && now - entry.stoppedAt > keepStoppedMs) removeEntry(entry);
  }
}, 10_000);

renderDetail();
connect();
void listNodes();
