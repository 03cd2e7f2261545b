/**
 * The chart panel: the selected actor's statechart with its active states highlighted, and the
 * transitions it takes played back as they arrive. Each step lights the edges it took and the
 * states it entered, and moves the highlight to the value after it, so a pod that went
 * running → terminating → terminated within one batch is still seen passing through each state.
 * With the queue empty, the highlight follows the actor's latest snapshot.
 */
import type { StateValue } from 'xstate';
import type { WireDefinition, WireStep } from '../../src/visualizer/wire.ts';
import { type Drawn, activeStateIds, drawDefinition, edgeKey, eventLabel } from './chart.ts';

/** How long one step stays on screen; shorter while many wait. */
const stepMs = 260;
const hurriedStepMs = 60;
const hurryAbove = 8;
/** Steps waiting beyond this are dropped (the oldest): the picture catches up instead of lagging. */
const maxQueued = 40;

export class ChartView {
  private chart: { def: WireDefinition; drawn: Drawn; active: Set<string> } | null = null;
  private chartFor: WireDefinition | null = null;
  private token = 0;
  private value: StateValue | undefined;
  private queue: WireStep[] = [];
  private timer = 0;
  private lit: Element[] = [];
  /** Layouts by definition, computed once (ahead of the first selection, when the page is idle). */
  private readonly layouts = new WeakMap<WireDefinition, Promise<Drawn>>();

  constructor(
    private readonly container: HTMLElement,
    private readonly stepLine: HTMLElement,
  ) {}

  /** Shows `def` (laid out once per definition) at `value`, forgetting any steps queued. */
  async show(def: WireDefinition | undefined, value: StateValue | undefined): Promise<void> {
    this.stopPlaying();
    this.value = value;
    this.stepLine.textContent = '';
    if (!def) {
      this.chart = null;
      this.chartFor = null;
      this.message('No definition for this machine yet.');
      return;
    }
    if (this.chartFor === def) {
      this.highlight(value);
      return;
    }
    this.chartFor = def;
    const token = ++this.token;
    this.message('Laying out…');
    try {
      const drawn = await this.layout(def);
      if (token !== this.token) return;
      // A layout is reused across selections: start it clean.
      for (const g of drawn.groups.values()) g.classList.remove('active', 'entered');
      for (const e of drawn.edges.values()) e.classList.remove('fired');
      this.container.replaceChildren(drawn.svg);
      this.chart = { def, drawn, active: new Set() };
      this.highlight(this.value);
    } catch (error) {
      if (token !== this.token) return;
      this.message(`Layout failed: ${String(error)}`);
    }
  }

  /** Lays `def` out when the page is idle, so that selecting an actor of it draws at once. */
  prepare(def: WireDefinition): void {
    if (this.layouts.has(def)) return;
    const idle = window.requestIdleCallback ?? ((fn: () => void) => setTimeout(fn, 200));
    this.layouts.set(def, new Promise<void>((resolve) => idle(() => resolve())).then(() => drawDefinition(def)));
  }

  private layout(def: WireDefinition): Promise<Drawn> {
    let drawn = this.layouts.get(def);
    if (!drawn) this.layouts.set(def, (drawn = drawDefinition(def)));
    return drawn;
  }

  /** Forces the next `show` to lay out again (a new picture may carry new definitions). */
  forget(): void {
    this.chartFor = null;
  }

  clear(): void {
    this.stopPlaying();
    this.token++;
    this.chart = null;
    this.chartFor = null;
    this.value = undefined;
    this.stepLine.textContent = '';
    this.container.replaceChildren();
  }

  /** The actor's latest value: shown at once unless steps are playing (then after them). */
  setValue(value: StateValue | undefined): void {
    this.value = value;
    if (!this.timer) this.highlight(value);
  }

  /** Queues the actor's steps for playback, in order. */
  play(steps: readonly WireStep[]): void {
    this.queue.push(...steps);
    if (this.queue.length > maxQueued) this.queue.splice(0, this.queue.length - maxQueued);
    if (!this.timer) this.next();
  }

  private next(): void {
    const step = this.queue.shift();
    if (!step) {
      this.timer = 0;
      this.highlight(this.value);
      return;
    }
    this.showStep(step);
    this.timer = window.setTimeout(() => this.next(), this.queue.length > hurryAbove ? hurriedStepMs : stepMs);
  }

  private stopPlaying(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = 0;
    this.queue = [];
    this.unlight();
  }

  private showStep(step: WireStep): void {
    this.unlight();
    this.stepLine.textContent = stepText(step);
    if (this.chart) {
      const { edges, groups } = this.chart.drawn;
      for (const t of step.transitions) {
        for (const target of t.targets) {
          const edge = edges.get(edgeKey(t.source, target));
          if (edge) this.light(edge, 'fired');
          const state = groups.get(target);
          if (state) this.light(state, 'entered');
        }
      }
    }
    this.highlight(step.value);
  }

  /** Adds `cls`, restarting its CSS animation if the element had it already. */
  private light(element: Element, cls: string): void {
    element.classList.remove(cls);
    void (element as SVGGraphicsElement).getBoundingClientRect();
    element.classList.add(cls);
    this.lit.push(element);
  }

  private unlight(): void {
    for (const element of this.lit) element.classList.remove('fired', 'entered');
    this.lit = [];
  }

  private highlight(value: StateValue | undefined): void {
    if (!this.chart) return;
    const next = activeStateIds(this.chart.def.root, value);
    const { groups } = this.chart.drawn;
    for (const id of this.chart.active) if (!next.has(id)) groups.get(id)?.classList.remove('active');
    for (const id of next) if (!this.chart.active.has(id)) groups.get(id)?.classList.add('active');
    this.chart.active = next;
  }

  private message(text: string): void {
    const div = document.createElement('div');
    div.className = 'empty';
    div.textContent = text;
    this.container.replaceChildren(div);
  }
}

/** A state node id without its machine's prefix: `pod.terminating.killing` → `terminating.killing`. */
export function shortStateId(id: string): string {
  const dot = id.indexOf('.');
  return dot < 0 ? id : id.slice(dot + 1);
}

/** `POD.KILL: syncing → terminating`. */
export function stepText(step: WireStep): string {
  const moves = step.transitions.map((t) => `${shortStateId(t.source)} → ${t.targets.map(shortStateId).join(', ')}`);
  return `${eventLabel(step.event)}: ${moves.join('; ')}`;
}
