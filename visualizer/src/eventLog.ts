/**
 * The event log of the selected actor: the events it received (config, PLEG, probe results, its
 * effects' completions and errors), the runtime calls its effect actors made (start, finish with
 * the duration, error), and the transitions they caused. Bounded: the oldest lines go first.
 * Timer ticks (isTimerTick) are left out unless asked for.
 */
import type { WireEvent, WirePayload, WireStep } from '../../src/visualizer/wire.ts';
import { eventLabel } from './chart.ts';
import { stepText } from './chartView.ts';

export type LogRecord = WireEvent | WireStep;

export const maxLogLines = 300;

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

function span(cls: string, text: string): HTMLSpanElement {
  const s = document.createElement('span');
  s.className = cls;
  s.textContent = text;
  return s;
}

function durationText(ms: unknown): string {
  if (typeof ms !== 'number') return '';
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(ms < 10 ? 1 : 0)} ms`;
}

/** A runtime call's line: `▶ Call target` while under way, `■ Call target 12 ms` (or `✗ … error`) once finished. */
function fillCall(li: HTMLLIElement, record: WireEvent): void {
  const p = record.payload ?? {};
  const finished = record.type === 'CRI.FINISHED';
  const failed = finished && typeof p.error === 'string';
  li.dataset.eventType = record.type;
  li.className = failed ? 'cri error' : finished ? 'cri' : 'cri pending';
  const time = li.firstElementChild!;
  const mark = finished ? (failed ? '✗' : '■') : '▶';
  const parts = [span('call', `${mark} ${String(p.call ?? '?')}`)];
  if (p.target) parts.push(span('target', ` ${String(p.target)}`));
  if (finished) parts.push(span('duration', ` ${durationText(p.durationMs)}`));
  if (failed) parts.push(span('payload', ` ${String(p.error)}`));
  if (record.via) parts.push(span('via', record.via));
  li.replaceChildren(time, ...parts);
}

/** The syncLoop's ticks to the pod workers: one every second or two, whatever happens. */
const tickEvents = new Set(['TICK.SYNC', 'TICK.HOUSEKEEPING']);

/**
 * A timer's own tick: a delayed event (`xstate.after.…`, whose step, when it moves, says it
 * anyway), a step it caused that only re-entered the state it left (the syncLoop's ticker every
 * second, its housekeeping every two), or a tick the syncLoop sends on those timers. They bury
 * the events that matter, so the log shows them only when asked.
 */
export function isTimerTick(record: LogRecord): boolean {
  if (record.kind === 'step') {
    return record.event.startsWith('xstate.after.') && record.transitions.every((t) => t.targets.length === 1 && t.targets[0] === t.source);
  }
  return record.type.startsWith('xstate.after.') || tickEvents.has(record.type);
}

const isCall = (record: LogRecord): record is WireEvent => record.kind === 'event' && (record.type === 'CRI.STARTED' || record.type === 'CRI.FINISHED');

/** Which started call a finish belongs to (call ids are unique in the agent). */
const callKey = (record: WireEvent) => String(record.payload?.callId);

/** One line: `time  TYPE  payload`, with CRI calls and transitions in their own forms. */
export function logItem(record: LogRecord): HTMLLIElement {
  const li = document.createElement('li');
  const t = document.createElement('time');
  t.textContent = time(record.at);
  li.append(t);
  if (record.kind === 'step') {
    li.className = 'step';
    li.dataset.step = record.transitions.flatMap((tr) => tr.targets).join(' ');
    li.append(span('move', `↳ ${stepText(record)}`));
    return li;
  }
  if (record.type === 'CRI.STARTED' || record.type === 'CRI.FINISHED') {
    fillCall(li, record);
    return li;
  }
  li.dataset.eventType = record.type;
  if (record.type.startsWith('xstate.error.')) li.className = 'error';
  const b = document.createElement('b');
  b.textContent = eventLabel(record.type);
  b.title = record.type;
  li.append(b);
  const text = payloadText(record.payload);
  if (text) li.append(span('payload', ` ${text}`));
  return li;
}

/**
 * The log's lines. A runtime call is one line: it appears when the call starts and is completed in
 * place when it finishes (a finish whose start is not shown gets its own line).
 */
export class EventLog {
  /** Lines of calls under way, by `callKey`. */
  private readonly pending = new Map<string, HTMLLIElement>();
  /** Whether timer ticks are shown (isTimerTick); set it, then `reset` with the actor's records. */
  showTimers = false;

  constructor(
    private readonly list: HTMLOListElement,
    private readonly scroller: HTMLElement,
  ) {}

  /** Starts over with `records` (a newly selected actor's), or says there is nothing yet. */
  reset(all: readonly LogRecord[], emptyText: string): void {
    this.clear();
    const records = this.shown(all);
    if (!records.length) {
      const li = document.createElement('li');
      li.className = 'empty';
      li.textContent = emptyText;
      this.list.append(li);
      return;
    }
    this.append(records);
  }

  private shown(records: readonly LogRecord[]): readonly LogRecord[] {
    return this.showTimers ? records : records.filter((r) => !isTimerTick(r));
  }

  clear(): void {
    this.list.replaceChildren();
    this.pending.clear();
  }

  /** Appends, keeping the view pinned to the bottom if it was there. */
  append(all: readonly LogRecord[]): void {
    const records = this.shown(all);
    if (!records.length) return;
    this.list.querySelector('.empty')?.remove();
    const atBottom = this.scroller.scrollTop + this.scroller.clientHeight >= this.scroller.scrollHeight - 8;
    const fragment = document.createDocumentFragment();
    for (const r of records.length > maxLogLines ? records.slice(-maxLogLines) : records) {
      if (isCall(r) && r.type === 'CRI.FINISHED') {
        const key = callKey(r);
        const line = this.pending.get(key);
        if (line) {
          this.pending.delete(key);
          fillCall(line, r);
          continue;
        }
      }
      const li = logItem(r);
      if (isCall(r) && r.type === 'CRI.STARTED') this.pending.set(callKey(r), li);
      fragment.append(li);
    }
    this.list.append(fragment);
    while (this.list.childElementCount > maxLogLines) {
      const first = this.list.firstElementChild as HTMLLIElement | null;
      if (!first) break;
      first.remove();
      if (first.classList.contains('pending')) for (const [k, li] of this.pending) if (li === first) this.pending.delete(k);
    }
    if (atBottom) this.scroller.scrollTop = this.scroller.scrollHeight;
  }
}
