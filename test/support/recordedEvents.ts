/** An event recorder that keeps what it is given, for tests to read. */
import type { ObjectReference } from '../../src/api/cluster.ts';
import type { EventRecorder, EventType } from '../../src/eventrecorder/recorder.ts';

export interface RecordedEvent {
  object: ObjectReference;
  type: EventType;
  reason: string;
  message: string;
}

export class RecordedEvents implements EventRecorder {
  readonly events: RecordedEvent[] = [];

  event(object: ObjectReference, type: EventType, reason: string, message: string): void {
    this.events.push({ object, type, reason, message });
  }

  /** `reason: message` of each event, in order, for compact assertions. */
  lines(): string[] {
    return this.events.map((e) => `${e.reason}: ${e.message}`);
  }
}
