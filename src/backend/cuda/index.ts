/**
 * The CUDA backend: the Backend interface on the thin addon (native.ts). One compute stream;
 * `run` launches in order and returns at once, `download`/`sync` wait on a worker thread.
 * `runBeside` launches on a second stream beside it: later work on the compute stream waits for
 * that work only where it touches a buffer the side work writes, or writes one it reads.
 * Kernels are compiled on first use (compile.ts) for the device's architecture and cached.
 * `capture` records a dispatch sequence into a CUDA graph that replays with one launch, dispatches
 * that share no written buffer as parallel branches (stream_plan.ts).
 */
import {
  type Backend,
  type BackendInfo,
  BackendUnavailableError,
  type ClusterOccupancy,
  type DeviceBuffer,
  DeviceLostError,
  type Dispatch,
  type KernelSpec,
} from '../types.js';
import { validateDispatch } from '../uniforms.js';
import { type Compiler, compileCached, compileOptions, findCompiler } from './compile.js';
import { type CudaNative, type DevicePtr, type Handle, loadNative, type NativeDeviceInfo } from './native.js';
import { packParams } from './params.js';
import { cudaPreamble } from './preamble.js';
import { kernelSource } from './sources.js';
import { type Access, planStreams } from './stream_plan.js';

/** Streams a captured graph's parallel branches use at most (the capturing stream included). */
const MAX_CAPTURE_STREAMS = 4;

/** The buffers a dispatch reads and writes, by its kernel's binding access. */
function accessOf(d: Dispatch): Access<DeviceBuffer> {
  const reads: DeviceBuffer[] = [];
  const writes: DeviceBuffer[] = [];
  d.kernel.bindings.forEach((b, i) => {
    (b.access === 'read' ? reads : writes).push(d.buffers[i]);
  });
  return { reads, writes };
}

interface Launch {
  d: Dispatch;
  fn: Handle;
  params: Uint8Array;
}

/** A dispatch sequence recorded once and replayed with one graph launch (same buffers, same uniforms). */
export interface CapturedSequence {
  /** Enqueues the whole sequence on the compute stream; ordered like `run`. */
  replay(): void;
  destroy(): void;
}

/** Backend extension: CUDA graphs for sequences that repeat unchanged. */
export interface GraphCapable {
  capture(dispatches: Dispatch[]): CapturedSequence;
}

export interface CudaBackendOptions {
  /** Device ordinal (after CUDA_VISIBLE_DEVICES). */
  device?: number;
}

/** Errors after which the context is unusable: the run must restart (from its checkpoint). */
const LOST_CODES = new Set([
  'CUDA_ERROR_ILLEGAL_ADDRESS',
  'CUDA_ERROR_LAUNCH_FAILED',
  'CUDA_ERROR_ILLEGAL_INSTRUCTION',
  'CUDA_ERROR_MISALIGNED_ADDRESS',
  'CUDA_ERROR_HARDWARE_STACK_ERROR',
  'CUDA_ERROR_ECC_UNCORRECTABLE',
  'CUDA_ERROR_LAUNCH_TIMEOUT',
  'CUDA_ERROR_DEVICE_UNAVAILABLE',
]);

/** Maps a native error to DeviceLostError when the context is gone; other errors pass unchanged. */
export function translateError(err: unknown): Error {
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && LOST_CODES.has(code)) return new DeviceLostError((err as Error).message);
  return err instanceof Error ? err : new Error(String(err));
}

function guarded<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw translateError(err);
  }
}

class CudaBuffer implements DeviceBuffer {
  constructor(
    readonly size: number,
    readonly label: string,
    readonly ptr: DevicePtr,
    readonly owner: CudaBackend,
  ) {}
  freed = false;
}

export class CudaBackend implements Backend, GraphCapable, ClusterOccupancy {
  readonly kind = 'cuda' as const;
  /** By spec object (the hot path: no hashing per launch), then by source text (equal specs). */
  private readonly bySpec = new WeakMap<KernelSpec, Handle>();
  private readonly byText = new Map<string, Handle>();
  private readonly modules: Handle[] = [];
  private readonly live = new Set<CudaBuffer>();
  private readonly options: string[];
  private destroyed = false;
  /** Streams of a capture's parallel branches (capture), made as needed and kept. */
  private readonly branches: Handle[] = [];
  /** The second stream of runBeside, its last launch's event, and the buffers of its unjoined work. */
  private side: { stream: Handle; done: Handle; pending: Access<CudaBuffer> | null } | null = null;

  constructor(
    private readonly native: CudaNative,
    private readonly compiler: Compiler,
    private readonly stream: Handle,
    readonly device: NativeDeviceInfo,
  ) {
    this.options = compileOptions(device.computeMajor, device.computeMinor);
  }

  get info(): BackendInfo {
    const d = this.device;
    const limits: Record<string, string | number> = {
      computeCapability: `${d.computeMajor}.${d.computeMinor}`,
      smCount: d.smCount,
      memoryMiB: Math.round(d.totalMemory / 2 ** 20),
      freeMemoryMiB: Math.round(d.freeMemory / 2 ** 20),
      maxThreadsPerBlock: d.maxThreadsPerBlock,
      maxSharedPerBlock: d.maxSharedPerBlock,
      maxSharedPerBlockOptin: d.maxSharedPerBlockOptin,
      l2CacheBytes: d.l2CacheBytes,
      compiler: this.compiler.id,
      timing: 'cuda-events',
    };
    if (d.memoryClockKHz) {
      // Double data rate: two transfers per clock over the bus width.
      limits.peakMemoryGBs = Math.round((2 * d.memoryClockKHz * 1e3 * (d.memoryBusWidthBits / 8)) / 1e9);
    }
    return { kind: this.kind, device: d.name, driver: driverVersionText(d.driverVersion), limits };
  }

  createBuffer(byteSize: number, label: string): DeviceBuffer {
    this.checkAlive();
    if (!Number.isInteger(byteSize) || byteSize < 0) throw new Error(`buffer ${label}: bad size ${byteSize}`);
    // cuMemAlloc refuses 0 bytes; a 4-byte minimum keeps empty buffers bindable like WebGPU's.
    const bytes = Math.max(4, Math.ceil(byteSize / 4) * 4);
    const ptr = guarded(() => this.native.memAlloc(bytes));
    // Zero-filled like WebGPU buffers, so twins that rely on it agree.
    guarded(() => this.native.memsetD8Async(ptr, 0, bytes, this.stream));
    const buf = new CudaBuffer(byteSize, label, ptr, this);
    this.live.add(buf);
    return buf;
  }

  upload(dst: DeviceBuffer, data: ArrayBufferView, dstByteOffset = 0): void {
    const b = this.own(dst);
    checkRange(b, dstByteOffset, data.byteLength, 'upload');
    this.after([], [b]);
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    guarded(() => this.native.memcpyHtoDAsync(b.ptr + BigInt(dstByteOffset), bytes, this.stream));
  }

  copy(src: DeviceBuffer, dst: DeviceBuffer, byteLength: number, srcByteOffset = 0, dstByteOffset = 0): void {
    const s = this.own(src);
    const d = this.own(dst);
    checkRange(s, srcByteOffset, byteLength, 'copy source');
    checkRange(d, dstByteOffset, byteLength, 'copy destination');
    if (byteLength === 0) return;
    this.after([s], [d]);
    guarded(() =>
      this.native.memcpyDtoDAsync(
        d.ptr + BigInt(dstByteOffset),
        s.ptr + BigInt(srcByteOffset),
        byteLength,
        this.stream,
      ),
    );
  }

  run(dispatches: Dispatch[]): void {
    const launches = this.prepare(dispatches);
    // The buffer lists only while side work is pending: no allocation per launch otherwise.
    if (this.side?.pending) this.afterAll(launches.map(({ d }) => this.accessOf(d)));
    for (const l of launches) this.launch(l, this.stream);
  }

  /**
   * Enqueues the dispatches on a second stream, after everything enqueued so far, and returns at
   * once: the compute stream goes on with later work. Its later work waits for them only where it
   * writes a buffer they read, or touches one they write (`after`); `download` of a buffer they
   * write waits for them alone; `sync` waits for both streams. An addon without streamWaitEvent
   * runs them in order on the compute stream.
   */
  runBeside(dispatches: Dispatch[]): void {
    if (typeof this.native.streamWaitEvent !== 'function') {
      this.run(dispatches);
      return;
    }
    const launches = this.prepare(dispatches);
    const accesses = launches.map(({ d }) => this.accessOf(d));
    this.afterAll(accesses);
    if (!this.side) {
      const stream = guarded(() => this.native.streamCreate());
      this.side = { stream, done: guarded(() => this.native.eventCreate()), pending: null };
    }
    const side = this.side;
    // The side stream starts after the compute stream's work so far (and its own earlier work).
    guarded(() => this.native.eventRecord(side.done, this.stream));
    guarded(() => this.native.streamWaitEvent(side.stream, side.done));
    for (const l of launches) this.launch(l, side.stream);
    guarded(() => this.native.eventRecord(side.done, side.stream));
    // A new object each time: a download that synced the side stream clears only what it waited for.
    side.pending = {
      reads: [...(side.pending?.reads ?? []), ...accesses.flatMap((a) => a.reads)],
      writes: [...(side.pending?.writes ?? []), ...accesses.flatMap((a) => a.writes)],
    };
  }

  /** The compute stream's next work waits for the side stream's if it conflicts with it on a buffer. */
  private after(reads: readonly CudaBuffer[], writes: readonly CudaBuffer[]): void {
    const p = this.side?.pending;
    if (!p) return;
    const conflict =
      reads.some((b) => p.writes.includes(b)) ||
      writes.some((b) => p.writes.includes(b) || p.reads.includes(b));
    if (conflict) this.join();
  }

  private afterAll(accesses: readonly Access<CudaBuffer>[]): void {
    for (const a of accesses) this.after(a.reads, a.writes);
  }

  /** The compute stream waits (on the device) for everything enqueued on the side stream. */
  private join(): void {
    const side = this.side;
    if (!side?.pending) return;
    guarded(() => this.native.streamWaitEvent(this.stream, side.done));
    side.pending = null;
  }

  private accessOf(d: Dispatch): Access<CudaBuffer> {
    const a = accessOf(d);
    return { reads: a.reads.map((b) => this.own(b)), writes: a.writes.map((b) => this.own(b)) };
  }

  /** Compiles and checks every dispatch first, so a bad one enqueues nothing. */
  private prepare(dispatches: Dispatch[]): Launch[] {
    this.checkAlive();
    return dispatches.map((d) => {
      validateDispatch(d);
      const fn = this.functionFor(d.kernel);
      return {
        d,
        fn,
        params: packParams(
          d,
          d.buffers.map((b) => this.own(b).ptr),
        ),
      };
    });
  }

  private launch({ d, fn, params }: Launch, stream: Handle): void {
    if (d.groups[0] * d.groups[1] * d.groups[2] === 0) return;
    const [bx, by, bz] = d.kernel.workgroupSize;
    const cluster = d.kernel.cluster;
    if (cluster) {
      guarded(() =>
        this.native.launchKernelCluster(
          fn,
          d.groups[0],
          d.groups[1],
          d.groups[2],
          bx,
          by,
          bz,
          d.kernel.sharedBytes ?? 0,
          stream,
          params,
          cluster[0],
          cluster[1],
          cluster[2],
        ),
      );
      return;
    }
    // PDL needs sm_90 (the kernel's own wait compiles away below it) and an addon built with
    // launchKernelPdl (an older build keeps working); a plain launch gives the same results.
    const launch =
      d.kernel.pdl && this.device.computeMajor >= 9 && typeof this.native.launchKernelPdl === 'function'
        ? this.native.launchKernelPdl
        : this.native.launchKernel;
    guarded(() =>
      launch.call(
        this.native,
        fn,
        d.groups[0],
        d.groups[1],
        d.groups[2],
        bx,
        by,
        bz,
        d.kernel.sharedBytes ?? 0,
        stream,
        params,
      ),
    );
  }

  async download(src: DeviceBuffer, byteOffset = 0, byteLength?: number): Promise<ArrayBuffer> {
    const b = this.own(src);
    const length = byteLength ?? b.size - byteOffset;
    checkRange(b, byteOffset, length, 'download');
    // A buffer the side stream writes comes back through it, not after the compute stream's work.
    const side = this.side;
    const waited = side?.pending;
    const stream = side && waited?.writes.includes(b) ? side.stream : this.stream;
    await this.syncStream(stream);
    // The side stream's work enqueued until then is done: nothing left to join.
    if (side && stream === side.stream && side.pending === waited) side.pending = null;
    const out = new ArrayBuffer(length);
    if (length > 0) {
      guarded(() => this.native.memcpyDtoH(new Uint8Array(out), b.ptr + BigInt(byteOffset), stream));
    }
    return out;
  }

  /** Waits for all enqueued work, the side stream's included. */
  async sync(): Promise<void> {
    this.checkAlive();
    this.join();
    await this.syncStream(this.stream);
  }

  private async syncStream(stream: Handle): Promise<void> {
    this.checkAlive();
    try {
      await this.native.streamSynchronizeAsync(stream);
    } catch (err) {
      throw translateError(err);
    }
  }

  /** Mean device milliseconds of one pass over `dispatches`, measured over `repeats` passes with events. */
  async time(dispatches: Dispatch[], repeats = 1): Promise<number> {
    this.checkAlive();
    if (!Number.isInteger(repeats) || repeats < 1)
      throw new Error(`time: repeats must be >= 1, got ${repeats}`);
    for (const d of dispatches) this.functionFor(d.kernel);
    const start = guarded(() => this.native.eventCreate());
    const end = guarded(() => this.native.eventCreate());
    try {
      guarded(() => this.native.eventRecord(start, this.stream));
      for (let r = 0; r < repeats; r++) this.run(dispatches);
      guarded(() => this.native.eventRecord(end, this.stream));
      await this.sync();
      return guarded(() => this.native.eventElapsedTime(start, end)) / repeats;
    } finally {
      this.native.eventDestroy(start);
      this.native.eventDestroy(end);
    }
  }

  capture(dispatches: Dispatch[]): CapturedSequence {
    // Module loads are not allowed while a stream captures: compile everything first.
    const launches = this.prepare(dispatches);
    const accesses = launches.map(({ d }) => this.accessOf(d));
    // Waits on the side stream go before the capture (and before each replay), not into the graph.
    this.afterAll(accesses);
    // Dispatches that share no written buffer become parallel branches (stream_plan.ts); an addon
    // built before streamWaitEvent captures the list in order.
    const forks = typeof this.native.streamWaitEvent === 'function';
    const plan = planStreams(accesses, forks ? MAX_CAPTURE_STREAMS : 1);
    while (this.branches.length < plan.streams - 1)
      this.branches.push(guarded(() => this.native.streamCreate()));
    const streams = [this.stream, ...this.branches];
    const events: Handle[] = [];
    const event = () => {
      const e = guarded(() => this.native.eventCreate());
      events.push(e);
      return e;
    };
    guarded(() => this.native.streamBeginCapture(this.stream));
    try {
      // Each branch joins the capture through an event recorded before any launch.
      const fork = plan.streams > 1 ? event() : undefined;
      if (fork) guarded(() => this.native.eventRecord(fork, this.stream));
      const started = new Set<number>([0]);
      const after: Handle[] = [];
      plan.stream.forEach((s, i) => {
        const stream = streams[s];
        if (!started.has(s)) {
          started.add(s);
          guarded(() => this.native.streamWaitEvent(stream, fork as Handle));
        }
        for (const w of plan.waits[i]) guarded(() => this.native.streamWaitEvent(stream, after[w]));
        this.launch(launches[i], stream);
        if (plan.waited[i]) {
          after[i] = event();
          guarded(() => this.native.eventRecord(after[i], stream));
        }
      });
      for (const j of plan.joins) guarded(() => this.native.streamWaitEvent(this.stream, after[j]));
    } catch (err) {
      try {
        this.native.graphDestroy(this.native.streamEndCapture(this.stream));
      } catch {
        // The capture is already invalid; the original error is the one to report.
      }
      for (const e of events) this.native.eventDestroy(e);
      throw err;
    }
    let graph: Handle;
    try {
      graph = guarded(() => this.native.streamEndCapture(this.stream));
    } finally {
      // The events only shaped the graph's edges; the graph does not refer to them.
      for (const e of events) this.native.eventDestroy(e);
    }
    let exec: Handle;
    try {
      exec = guarded(() => this.native.graphInstantiate(graph));
    } finally {
      this.native.graphDestroy(graph);
    }
    let alive = true;
    return {
      replay: () => {
        if (!alive) throw new Error('captured sequence was destroyed');
        this.checkAlive();
        this.afterAll(accesses);
        guarded(() => this.native.graphLaunch(exec, this.stream));
      },
      destroy: () => {
        if (!alive || this.destroyed) return;
        alive = false;
        this.native.graphExecDestroy(exec);
      },
    };
  }

  destroyBuffer(buf: DeviceBuffer): void {
    const b = this.own(buf);
    // cuMemFree waits for the device's work; the buffer leaves the side stream's pending set.
    this.after([], [b]);
    b.freed = true;
    this.live.delete(b);
    guarded(() => this.native.memFree(b.ptr));
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const b of this.live) {
      b.freed = true;
      this.native.memFree(b.ptr);
    }
    this.live.clear();
    for (const m of this.modules) this.native.moduleUnload(m);
    for (const b of this.branches) this.native.streamDestroy(b);
    if (this.side) {
      this.native.eventDestroy(this.side.done);
      this.native.streamDestroy(this.side.stream);
    }
    this.native.streamDestroy(this.stream);
    this.native.shutdown();
  }

  /**
   * How many thread-block clusters of `spec`'s shape (block, dynamic shared memory, cluster) this GPU
   * holds at once (cuOccupancyMaxActiveClusters; compiles the kernel if it is not yet); undefined for
   * a kernel without clusters or a driver that cannot say. A grid of more clusters runs in waves.
   */
  maxActiveClusters(spec: KernelSpec): number | undefined {
    if (!spec.cluster) return undefined;
    const fn = this.functionFor(spec);
    const [bx, by, bz] = spec.workgroupSize;
    const [cx, cy, cz] = spec.cluster;
    const n = guarded(() => this.native.maxActiveClusters(fn, bx, by, bz, spec.sharedBytes ?? 0, cx, cy, cz));
    return n >= 0 ? n : undefined;
  }

  /** The kernel's function handle: compiled (or read from the cache) and loaded on first use. */
  private functionFor(spec: KernelSpec): Handle {
    const known = this.bySpec.get(spec);
    if (known !== undefined) return known;
    if (spec.cluster && this.device.computeMajor < 9) {
      throw new Error(
        `CUDA kernel ${spec.name} runs in thread-block clusters, which need compute capability 9.0 or newer ` +
          `(this GPU is ${this.device.computeMajor}.${this.device.computeMinor}): use another variant`,
      );
    }
    const source = kernelSource(spec.name);
    const text = cudaPreamble(spec) + source.source;
    let fn = this.byText.get(text);
    if (fn === undefined) {
      const cubin = compileCached(this.compiler, spec.name, text, source.headers, this.options);
      const mod = guarded(() => this.native.moduleLoadData(cubin));
      this.modules.push(mod);
      fn = guarded(() => this.native.moduleGetFunction(mod, spec.name));
      this.byText.set(text, fn);
    }
    // Per spec, not per module: equal sources may differ in the shared memory they launch with.
    const shared = spec.sharedBytes ?? 0;
    if (shared > STATIC_SHARED_BYTES) {
      const handle = fn;
      guarded(() => this.native.funcSetMaxDynamicShared(handle, shared));
    }
    if (spec.cluster && spec.cluster[0] * spec.cluster[1] * spec.cluster[2] > 8) {
      const handle = fn;
      guarded(() => this.native.funcAllowNonPortableCluster(handle));
    }
    this.bySpec.set(spec, fn);
    return fn;
  }

  private own(buf: DeviceBuffer): CudaBuffer {
    this.checkAlive();
    if (!(buf instanceof CudaBuffer) || buf.owner !== this) {
      throw new Error(`buffer ${buf.label} does not belong to this CUDA backend`);
    }
    if (buf.freed) throw new Error(`buffer ${buf.label} was destroyed`);
    return buf;
  }

  private checkAlive(): void {
    if (this.destroyed) throw new Error('the CUDA backend was destroyed');
  }
}

/** Shared memory a launch gets without opting in (cuFuncSetAttribute). */
const STATIC_SHARED_BYTES = 48 * 1024;

function checkRange(b: CudaBuffer, offset: number, length: number, what: string): void {
  if (
    !Number.isInteger(offset) ||
    !Number.isInteger(length) ||
    offset < 0 ||
    length < 0 ||
    offset + length > b.size
  ) {
    throw new Error(
      `${what}: bytes [${offset}, ${offset + length}) outside buffer ${b.label} of ${b.size} bytes`,
    );
  }
}

/** cuDriverGetVersion's 13000 -> `CUDA 13.0`. */
export function driverVersionText(v: number): string {
  return `CUDA ${Math.floor(v / 1000)}.${Math.floor((v % 1000) / 10)}`;
}

/**
 * The CUDA backend, or a BackendUnavailableError whose message is the one line a user needs
 * (addon not built, no driver, no device, no compiler).
 */
export async function createCudaBackend(options: CudaBackendOptions = {}): Promise<CudaBackend> {
  const native = loadNative();
  try {
    native.init(options.device ?? 0, process.env.FOXHUNT_LIBCUDA || 'libcuda.so.1');
  } catch (err) {
    throw new BackendUnavailableError('cuda', (err as Error).message);
  }
  let compiler: Compiler;
  try {
    compiler = findCompiler(native);
  } catch (err) {
    native.shutdown();
    throw new BackendUnavailableError('cuda', (err as Error).message);
  }
  try {
    return new CudaBackend(native, compiler, native.streamCreate(), native.deviceInfo());
  } catch (err) {
    native.shutdown();
    throw translateError(err);
  }
}
