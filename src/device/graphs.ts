/**
 * Replayable dispatch sequences on backends that record them (CUDA: `capture` records a CUDA
 * graph, src/backend/cuda/index.ts). A captured sequence keeps its buffers and uniforms, so a
 * caller keys each graph by whatever its uniforms depend on and records a new one when the key is
 * new; the cache keeps the most recently used `limit` graphs.
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
  /** Graphs recorded so far (for tests and benches). */
  captures = 0;

  constructor(
    private readonly backend: Backend & Capturable,
    private readonly limit = 16,
  ) {}

  /** Enqueues the graph recorded under `key`, recording `record()` first when there is none. */
  replay(key: string, record: () => Dispatch[]): void {
    let graph = this.graphs.get(key);
    if (graph) {
      this.graphs.delete(key);
    } else {
      graph = this.backend.capture(record());
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
