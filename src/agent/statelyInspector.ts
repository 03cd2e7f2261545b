/**
 * `--inspect=stately`: streams the agent's actor system to Stately's inspector through
 * `@statelyai/inspect`'s WebSocket inspector. The agent is a WebSocket client of `--inspect-url`
 * (by default the library's own `ws://localhost:8080`), where a relay such as the library's
 * `createInspectorServer()` (from `@statelyai/inspect/server`) forwards the records to the
 * inspector UI in a browser.
 *
 * Records are sent as the library produces them (actor, event and snapshot records), except that
 * container environment variables, `envFrom` and pod annotations are replaced before they leave
 * the process, as the built-in visualizer does not show them either.
 */
import { type StatelyInspectionEvent, createWebSocketInspector } from '@statelyai/inspect';
import type { InspectionEvent, Observer } from 'xstate';

/** The library's default relay address (`createWebSocketInspector`'s `url`). */
const DEFAULT_STATELY_INSPECT_URL = 'ws://localhost:8080';

interface StatelyInspector {
  /** Pass as (or tee into) the actor system's `inspect` option. */
  readonly inspect: Observer<InspectionEvent>;
  /** Closes the WebSocket. */
  stop(): void;
  /** Where the records go. */
  readonly url: string;
}

export function startStatelyInspector(url: string = DEFAULT_STATELY_INSPECT_URL): StatelyInspector {
  const inspector = createWebSocketInspector({
    url,
    // Applied to each whole record (snapshots, their inputs, events) before the library sends it.
    serialize: (record) => redact(record, 0) as StatelyInspectionEvent,
  });
  let stopped = false;
  return {
    inspect: {
      next: (record) => {
        // The library converts each record later, on a timer, where a throw would be uncaught:
        // hand it only the kinds of record it converts, and only as XState makes them.
        if (stopped || !forwarded.has(record.type) || !record.actorRef) return;
        try {
          inspector.inspect.next?.(record);
        } catch {
          // dropped
        }
      },
    },
    stop: () => {
      if (stopped) return;
      stopped = true;
      inspector.stop();
    },
    url,
  };
}

const forwarded: ReadonlySet<string> = new Set(['@xstate.actor', '@xstate.event', '@xstate.snapshot']);
const redactedKeys = new Set(['env', 'envFrom', 'annotations']);
const maxDepth = 32;

/** A copy of plain objects and arrays with sensitive pod fields replaced; anything else as is. */
function redact(value: unknown, depth: number): unknown {
  if (depth > maxDepth || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => redact(item, depth + 1));
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    out[key] = redactedKeys.has(key) && item !== undefined ? '[redacted]' : redact(item, depth + 1);
  }
  return out;
}
