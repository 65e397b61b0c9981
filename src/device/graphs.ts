/**
 * Replayable dispatch sequences: a CUDA graph where the backend records them (`capture`,
 * src/backend/cuda/index.ts), elsewhere the recorded list itself, run again as the same dispatch
 * objects (WebGPU checks and packs a dispatch object's uniforms once, src/backend/webgpu/index.ts).
 * A recorded sequence keeps its buffers and uniforms, so a caller keys each one by whatever its
 * uniforms depend on and records a new one when the key is new; the cache keeps the most recently
 * used `limit` sequences.
 */
import type { Backend, Dispatch } from '../backend/types.js';

export interface CapturedSequence {
  replay(): void;
  destroy(): void;
}

export interface Capturable {
  capture(dispatches: Dispatch[]): CapturedSequence;
}

export function canCapture(b: Backend): b is Backend & Capturable {
  return typeof (b as Partial<Capturable>).capture === 'function';
}

export class GraphCache {
  private readonly graphs = new Map<string, CapturedSequence>();
  /** Sequences recorded so far (for tests and benches). */
  captures = 0;

  constructor(
    private readonly backend: Backend,
    private readonly limit = 16,
  ) {}

  private record(list: Dispatch[]): CapturedSequence {
    const b = this.backend;
    if (canCapture(b)) return b.capture(list);
    return { replay: () => b.run(list), destroy() {} };
  }

  /** Enqueues the graph recorded under `key`, recording `record()` first when there is none. */
  replay(key: string, record: () => Dispatch[]): void {
    let graph = this.graphs.get(key);
    if (graph) {
      this.graphs.delete(key);
    } else {
      graph = this.record(record());
      this.captures++;
      if (this.graphs.size >= this.limit) {
        const [oldest, evicted] = this.graphs.entries().next().value as [string, CapturedSequence];
        this.graphs.delete(oldest);
        evicted.destroy();
      }
    }
    this.graphs.set(key, graph);
    graph.replay();
  }

  destroy(): void {
    for (const g of this.graphs.values()) g.destroy();
    this.graphs.clear();
  }
}
