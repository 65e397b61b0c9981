/**
 * Streams for a captured dispatch sequence (CudaBackend.capture): dispatches that touch no common
 * buffer, or only read one, need not wait for each other, so the graph gets them as parallel
 * branches (a DQN train step's PER sampling and priority update run beside the backward pass and
 * Adam). The order the list gives is kept wherever two dispatches conflict on a buffer (one writes
 * what the other reads or writes, per the kernels' binding access), so the graph computes what the
 * list computes, bit for bit: every kernel's result depends only on the buffers it reads.
 *
 * Stream 0 is the capturing stream. A dispatch goes on a stream whose every dispatch so far it must
 * follow anyway (no false dependency), else on a new stream (up to `maxStreams`), else on the
 * stream with the fewest dispatches it need not wait for. It waits on the dispatches of other
 * streams it must follow and is not already ordered after (vector clocks). Stream 0 joins every
 * other stream at the end, as a capture requires.
 */

/** The buffers a dispatch reads and writes (a buffer in both lists is written). */
export interface Access<B> {
  reads: readonly B[];
  writes: readonly B[];
}

export interface StreamPlan {
  /** Streams used, stream 0 included. */
  streams: number;
  /** The stream of each dispatch. */
  stream: number[];
  /** Per dispatch: the dispatches (on other streams) it waits for before it is enqueued. */
  waits: number[][];
  /** Per dispatch: whether a later dispatch or the final join waits for it (it records an event). */
  waited: boolean[];
  /** The dispatches stream 0 waits for at the end: the last ones of the other streams not yet joined. */
  joins: number[];
}

/** Per dispatch, the earlier dispatches it conflicts with on a buffer (read after write, write after read or write). */
export function conflicts<B>(accesses: readonly Access<B>[]): number[][] {
  const lastWriter = new Map<B, number>();
  const readers = new Map<B, number[]>();
  return accesses.map((a, i) => {
    const deps = new Set<number>();
    const writes = new Set(a.writes);
    for (const b of new Set([...a.reads, ...a.writes])) {
      const w = lastWriter.get(b);
      if (w !== undefined) deps.add(w);
      if (writes.has(b)) {
        for (const r of readers.get(b) ?? []) deps.add(r);
      }
    }
    for (const b of new Set(a.reads)) {
      if (writes.has(b)) continue;
      let list = readers.get(b);
      if (!list) {
        list = [];
        readers.set(b, list);
      }
      list.push(i);
    }
    for (const b of writes) {
      lastWriter.set(b, i);
      readers.set(b, []);
    }
    return [...deps].sort((x, y) => x - y);
  });
}

export function planStreams<B>(accesses: readonly Access<B>[], maxStreams = 4): StreamPlan {
  if (!Number.isInteger(maxStreams) || maxStreams < 1)
    throw new Error(`planStreams: maxStreams must be an integer >= 1, got ${maxStreams}`);
  const deps = conflicts(accesses);
  const n = accesses.length;
  const S = maxStreams;
  // ops[s]: the dispatches of stream s in order; clock[i][s]: how many of stream s's dispatches are
  // complete once dispatch i is (i's own stream included, i itself counted).
  const ops: number[][] = [[]];
  const clock: number[][] = [];
  const tailClock: number[][] = [new Array(S).fill(0)];
  const stream: number[] = new Array(n);
  const waits: number[][] = [];
  const waited: boolean[] = new Array(n).fill(false);
  const pos: number[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const need = new Array(S).fill(0);
    for (const d of deps[i]) for (let s = 0; s < S; s++) need[s] = Math.max(need[s], clock[d][s]);
    // A stream whose dispatches i follows anyway: continue the chain of a dependency's stream first.
    let chosen = -1;
    for (let s = 0; s < ops.length; s++) {
      const len = ops[s].length;
      if (need[s] < len) continue;
      if (chosen < 0 || (len > 0 && need[s] === len && ops[chosen].length === 0)) chosen = s;
      if (len > 0 && need[s] === len) break;
    }
    if (chosen < 0 && ops.length < S) {
      chosen = ops.length;
      ops.push([]);
      tailClock.push(new Array(S).fill(0));
    }
    if (chosen < 0) {
      let best = Infinity;
      for (let s = 0; s < ops.length; s++) {
        const extra = ops[s].length - need[s];
        if (extra < best) {
          best = extra;
          chosen = s;
        }
      }
    }
    const known = tailClock[chosen].slice();
    const w: number[] = [];
    for (let s = 0; s < ops.length; s++) {
      if (s === chosen || need[s] <= known[s]) continue;
      const op = ops[s][need[s] - 1];
      w.push(op);
      waited[op] = true;
      for (let t = 0; t < S; t++) known[t] = Math.max(known[t], clock[op][t]);
    }
    stream[i] = chosen;
    pos[i] = ops[chosen].length;
    ops[chosen].push(i);
    known[chosen] = ops[chosen].length;
    clock[i] = known;
    tailClock[chosen] = known;
    waits.push(w);
  }
  const joins: number[] = [];
  const known = tailClock[0].slice();
  for (let s = 1; s < ops.length; s++) {
    if (ops[s].length <= known[s]) continue;
    const op = ops[s][ops[s].length - 1];
    joins.push(op);
    waited[op] = true;
    for (let t = 0; t < S; t++) known[t] = Math.max(known[t], clock[op][t]);
  }
  return { streams: ops.length, stream, waits, waited, joins };
}
