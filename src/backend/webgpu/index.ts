/**
 * The WebGPU backend, one code path for Node (Dawn) and browsers. One runner owns the command
 * encoder: `run`, `copy` and `upload` append to it, and it is submitted only when something must
 * be read back or waited for (`download`, `sync`, `time`) or a buffer is destroyed, and every
 * RUN_CHUNK dispatches of a long `run`, so the GPU starts on a long list while the host still
 * encodes the rest. Pipelines are cached by kernel name + workgroup size + constants (no runtime
 * sizes). Each `run` (each chunk of it) writes the uniforms of its dispatches into one pooled
 * uniform buffer with one `writeBuffer`, each dispatch binding its own aligned region through a
 * dynamic offset.
 *
 * Bind groups are cached, keyed by pipeline, storage buffers and uniform buffer (the uniform
 * region is a dynamic offset, so it is not part of the key; the uniform buffers come from a small
 * pool, so keys recur from one run to the next): creating one per dispatch cost most of the host's
 * ~50 us per dispatch. `destroyBuffer` drops every cached group that binds the buffer.
 *
 * Ordering: `queue.writeBuffer` executes before any not-yet-submitted commands, so an upload while
 * commands are pending goes through a staging buffer copied inside the encoder instead, and a
 * uniform buffer is reused only once the encoder that references it has been submitted.
 */
import { wgslSources } from '../../kernels/sources.js';
import {
  type Backend,
  type BackendInfo,
  BackendUnavailableError,
  type DeviceBuffer,
  DeviceLostError,
  type Dispatch,
  type KernelSpec,
} from '../types.js';
import { packUniforms, rejectCluster, uniformBytes, validateDispatch } from '../uniforms.js';
import { type AdapterSummary, adapterName, findGpu, summarizeAdapter } from './gpu.js';
import { wgslModule } from './preamble.js';

// The WebGPU flag values (GPUBufferUsage, GPUMapMode, GPUShaderStage), spelled out because Dawn's
// Node bindings do not install those globals.
const Usage = {
  MAP_READ: 0x1,
  COPY_SRC: 0x4,
  COPY_DST: 0x8,
  UNIFORM: 0x40,
  STORAGE: 0x80,
  QUERY_RESOLVE: 0x200,
};
const MAP_READ = 0x1;
/** Runs encoded before an unrequested submit; see `encode`. */
const MAX_PENDING_RUNS = 64;
/**
 * Dispatches per submission of a long `run` (not `time`, which measures one pass): small enough
 * that the GPU starts early, big enough that a submit's cost (tens of us) stays well below the
 * chunk's encoding.
 */
export const RUN_CHUNK = 256;
/** Cached bind groups before the cache is dropped (the learner's steady state needs ~100s). */
const MAX_BIND_GROUPS = 16_384;
/** How long a failed map waits for device.lost before it reports the map's own error. */
const LOST_WAIT_MS = 1000;
const COMPUTE_STAGE = 0x4;

/** Limits requested at the adapter's real values instead of WebGPU's conservative defaults. */
const LIMITS = [
  'maxStorageBuffersPerShaderStage',
  'maxComputeWorkgroupStorageSize',
  'maxStorageBufferBindingSize',
  'maxBufferSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupSizeY',
  'maxComputeWorkgroupSizeZ',
  'maxComputeWorkgroupsPerDimension',
  'maxUniformBufferBindingSize',
  'maxUniformBuffersPerShaderStage',
  'maxBindingsPerBindGroup',
] as const;

/** Features used when present: GPU timing, subgroup operations. */
const OPTIONAL_FEATURES: GPUFeatureName[] = ['timestamp-query', 'subgroups'];

/** A WebGPU validation or out-of-memory error: a bug in a kernel or its dispatch, or a size too big. */
export class WebGpuError extends Error {
  override name = 'WebGpuError';
}

export interface WebGpuOptions {
  /** A GPU object (`navigator.gpu`, or Dawn's `create([...])`); default: found by `findGpu`. */
  gpu?: GPU;
  /** Refuse a software adapter (llvmpipe, SwiftShader) with BackendUnavailableError: `auto` routing. */
  requireHardware?: boolean;
}

const align = (n: number, a: number) => Math.ceil(n / a) * a;
const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

class WebGpuBuffer implements DeviceBuffer {
  /** Keys of the cached bind groups that bind this buffer (dropped when it is destroyed). */
  readonly bindGroupKeys = new Set<string>();
  constructor(
    readonly owner: WebGpuBackend,
    readonly gpu: GPUBuffer,
    readonly size: number,
    readonly label: string,
    /** Identity in bind-group cache keys. */
    readonly id: number,
  ) {}
}

interface Pipeline {
  pipeline: GPUComputePipeline;
  layout: GPUBindGroupLayout;
  /** Identity in bind-group cache keys. */
  id: number;
}

export async function createWebGpuBackend(opts: WebGpuOptions = {}): Promise<WebGpuBackend> {
  const gpu = await findGpu(opts.gpu);
  let adapter: GPUAdapter | null;
  try {
    adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  } catch (err) {
    throw new BackendUnavailableError('webgpu', `requestAdapter failed: ${message(err)}`);
  }
  if (!adapter) {
    throw new BackendUnavailableError(
      'webgpu',
      'no WebGPU adapter (install a Vulkan, Metal or D3D12 driver; Mesa lavapipe gives a software one)',
    );
  }
  const summary = summarizeAdapter(adapter);
  if (opts.requireHardware && summary.software) {
    throw new BackendUnavailableError(
      'webgpu',
      `only a software adapter (${adapterName(summary)}); pass --backend webgpu to use it anyway`,
    );
  }
  const requiredLimits: Record<string, number> = {};
  for (const key of LIMITS) {
    const v = (adapter.limits as unknown as Record<string, unknown>)[key];
    if (typeof v === 'number') requiredLimits[key] = v;
  }
  const features = OPTIONAL_FEATURES.filter((f) => adapter.features.has(f));
  let device: GPUDevice;
  try {
    device = await adapter.requestDevice({ label: 'foxhunt', requiredLimits, requiredFeatures: features });
  } catch (err) {
    throw new BackendUnavailableError(
      'webgpu',
      `requestDevice on ${adapterName(summary)} failed: ${message(err)}`,
    );
  }
  return new WebGpuBackend(gpu, device, summary, requiredLimits, features);
}

export class WebGpuBackend implements Backend {
  readonly kind = 'webgpu' as const;
  readonly info: BackendInfo;
  /** How `time()` measures: GPU timestamps around the compute pass, or host wall clock around the queue. */
  readonly timing: 'timestamp-query' | 'wall-clock';
  // Dawn's instance lives as long as this reference; `destroy()` drops it so Node can exit.
  private gpu: GPU | null;
  private encoder: GPUCommandEncoder | null = null;
  private readonly pipelines = new Map<string, Pipeline>();
  // Specs are immutable descriptors shared by reference: this skips building the string key.
  private readonly pipelineBySpec = new WeakMap<KernelSpec, Pipeline>();
  private readonly bindGroups = new Map<string, GPUBindGroup>();
  // Every uniform buffer ever made, with its size (read without a call into the driver) and id.
  private readonly uniformAll = new Map<GPUBuffer, { buf: GPUBuffer; id: number; size: number }>();
  private nextId = 0;
  private uniformFree: { buf: GPUBuffer; id: number; size: number }[] = [];
  private uniformPending: GPUBuffer[] = [];
  private stagingPending: GPUBuffer[] = [];
  private readonly buffers = new Set<WebGpuBuffer>();
  private querySet: GPUQuerySet | null = null;
  // The first error of each kind; `check()` throws the most telling: a lost device, then a kernel
  // that did not compile (which also invalidates every later use of its pipeline), then the rest.
  private lost: DeviceLostError | null = null;
  private compileError: WebGpuError | null = null;
  private failure: WebGpuError | null = null;
  // Pipeline compilations whose error scope has not resolved yet; awaited before reporting.
  private compiling: Promise<void>[] = [];
  private destroyed = false;
  private readonly uniformAlign: number;
  /**
   * Dispatches already validated, with their packed uniforms: an update runs the same dispatch
   * objects every time (17,500 per default PPO update, mlp_backward with 88 uniforms), so each is
   * checked and packed once per uniforms/buffers/kernel objects it carries (dispatches are not
   * mutated in place; a new uniforms object is checked again). Buffers are still checked per run.
   */
  private readonly checked = new WeakMap<
    Dispatch,
    { uniforms: Dispatch['uniforms']; buffers: Dispatch['buffers']; kernel: KernelSpec; bytes: Uint8Array }
  >();
  private readonly maxBinding: number;

  constructor(
    gpu: GPU,
    readonly device: GPUDevice,
    readonly adapter: AdapterSummary,
    limits: Record<string, number>,
    readonly features: GPUFeatureName[],
  ) {
    this.gpu = gpu;
    this.uniformAlign = device.limits.minUniformBufferOffsetAlignment;
    this.maxBinding = device.limits.maxStorageBufferBindingSize;
    this.timing = features.includes('timestamp-query') ? 'timestamp-query' : 'wall-clock';
    const isNode = typeof process !== 'undefined' && typeof process.versions?.node === 'string';
    this.info = {
      kind: 'webgpu',
      device: adapterName(adapter),
      driver: isNode
        ? 'Dawn (npm webgpu)'
        : `browser WebGPU (${globalThis.navigator?.userAgent ?? 'unknown'})`,
      limits: {
        vendor: adapter.vendor,
        architecture: adapter.architecture,
        software: adapter.software ? 'yes' : 'no',
        features: features.join(',') || 'none',
        timing: this.timing,
        ...limits,
      },
    };
    device.lost.then((info) => {
      if (this.destroyed) return;
      this.lost ??= new DeviceLostError(
        `WebGPU device lost (${info.reason}): ${info.message || 'no message'}; restart the run (it resumes from its last checkpoint)`,
      );
    });
    device.addEventListener('uncapturederror', (ev) => {
      this.recordError((ev as GPUUncapturedErrorEvent).error);
    });
  }

  private recordError(error: GPUError): void {
    const oom = error.constructor?.name === 'GPUOutOfMemoryError';
    this.failure ??= new WebGpuError(
      oom
        ? `out of GPU memory: ${error.message}; reduce rollout.episodes, rollout.steps or dqn.replayCapacity`
        : `WebGPU error: ${error.message}`,
    );
  }

  /** Throws the device loss or GPU error seen so far; every later call throws it too. */
  private check(): void {
    if (this.destroyed) throw new Error('webgpu backend used after destroy()');
    const err = this.lost ?? this.compileError ?? this.failure;
    if (err) throw err;
  }

  /** `check()` once every pending pipeline compilation has reported. */
  private async settle(): Promise<void> {
    const pending = this.compiling;
    this.compiling = [];
    await Promise.all(pending);
    this.check();
  }

  private own(buf: DeviceBuffer): WebGpuBuffer {
    if (!(buf instanceof WebGpuBuffer) || buf.owner !== this) {
      throw new Error(`buffer ${buf.label} does not belong to this webgpu backend`);
    }
    return buf;
  }

  private range(buf: WebGpuBuffer, offset: number, length: number, what: string): void {
    if (!Number.isInteger(offset) || !Number.isInteger(length) || offset < 0 || length < 0) {
      throw new Error(`${what} ${buf.label}: bad range offset ${offset}, length ${length}`);
    }
    if (offset + length > buf.size) {
      throw new Error(
        `${what} ${buf.label}: bytes [${offset}, ${offset + length}) exceed its ${buf.size} bytes`,
      );
    }
    if (offset % 4 !== 0 || length % 4 !== 0) {
      throw new Error(`${what} ${buf.label}: offset and length must be multiples of 4 bytes`);
    }
  }

  private get pending(): GPUCommandEncoder {
    this.encoder ??= this.device.createCommandEncoder({ label: 'foxhunt' });
    return this.encoder;
  }

  createBuffer(byteSize: number, label: string): DeviceBuffer {
    this.check();
    if (!Number.isInteger(byteSize) || byteSize < 0) throw new Error(`buffer ${label}: bad size ${byteSize}`);
    const max = this.device.limits.maxBufferSize;
    if (byteSize > max) {
      throw new Error(
        `buffer ${label}: ${byteSize} bytes exceed this device's maxBufferSize (${max}); reduce rollout.episodes, rollout.steps or dqn.replayCapacity`,
      );
    }
    const gpu = this.device.createBuffer({
      label,
      size: Math.max(4, align(byteSize, 4)),
      usage: Usage.STORAGE | Usage.COPY_SRC | Usage.COPY_DST,
    });
    const buf = new WebGpuBuffer(this, gpu, byteSize, label, this.nextId++);
    this.buffers.add(buf);
    return buf;
  }

  upload(dst: DeviceBuffer, data: ArrayBufferView, dstByteOffset = 0): void {
    this.check();
    const buf = this.own(dst);
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    this.range(buf, dstByteOffset, bytes.byteLength, 'upload to');
    if (bytes.byteLength === 0) return;
    if (!this.encoder) {
      this.device.queue.writeBuffer(buf.gpu, dstByteOffset, bytes as Uint8Array<ArrayBuffer>);
      return;
    }
    const staging = this.device.createBuffer({
      label: `upload to ${buf.label}`,
      size: bytes.byteLength,
      usage: Usage.COPY_SRC,
      mappedAtCreation: true,
    });
    new Uint8Array(staging.getMappedRange()).set(bytes);
    staging.unmap();
    this.encoder.copyBufferToBuffer(staging, 0, buf.gpu, dstByteOffset, bytes.byteLength);
    this.stagingPending.push(staging);
  }

  copy(src: DeviceBuffer, dst: DeviceBuffer, byteLength: number, srcByteOffset = 0, dstByteOffset = 0): void {
    this.check();
    const s = this.own(src);
    const d = this.own(dst);
    if (s === d)
      throw new Error(`copy: ${s.label} onto itself is not allowed in WebGPU; copy via a scratch buffer`);
    this.range(s, srcByteOffset, byteLength, 'copy from');
    this.range(d, dstByteOffset, byteLength, 'copy to');
    if (byteLength === 0) return;
    this.pending.copyBufferToBuffer(s.gpu, srcByteOffset, d.gpu, dstByteOffset, byteLength);
  }

  run(dispatches: Dispatch[]): void {
    this.encode(dispatches);
  }

  private pipeline(spec: KernelSpec): Pipeline {
    const known = this.pipelineBySpec.get(spec);
    if (known) return known;
    const constants = Object.entries(spec.constants ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
    const key = `${spec.name}|${spec.workgroupSize.join('x')}|${JSON.stringify(constants)}`;
    const cached = this.pipelines.get(key);
    if (cached) {
      this.pipelineBySpec.set(spec, cached);
      return cached;
    }
    const source = wgslSources[spec.name];
    if (source === undefined) {
      throw new Error(`no WGSL source for kernel ${spec.name}: add wgsl/${spec.name}.wgsl`);
    }
    const entries: GPUBindGroupLayoutEntry[] = spec.bindings.map((b, i) => ({
      binding: i,
      visibility: COMPUTE_STAGE,
      buffer: { type: b.access === 'read' ? 'read-only-storage' : 'storage' },
    }));
    if (spec.uniforms.length > 0) {
      entries.push({
        binding: spec.bindings.length,
        visibility: COMPUTE_STAGE,
        buffer: { type: 'uniform', hasDynamicOffset: true },
      });
    }
    const layout = this.device.createBindGroupLayout({ label: spec.name, entries });
    this.device.pushErrorScope('validation');
    const module = this.device.createShaderModule({ label: spec.name, code: wgslModule(spec, source) });
    const pipeline = this.device.createComputePipeline({
      label: spec.name,
      layout: this.device.createPipelineLayout({ label: spec.name, bindGroupLayouts: [layout] }),
      compute: { module, entryPoint: spec.name },
    });
    this.compiling.push(
      this.device.popErrorScope().then((err) => {
        if (!err) return;
        this.compileError ??= new WebGpuError(
          `compiling kernel ${spec.name} (wgsl/${spec.name}.wgsl; line numbers count the generated preamble): ${err.message}`,
        );
      }),
    );
    const p = { pipeline, layout, id: this.nextId++ };
    this.pipelines.set(key, p);
    this.pipelineBySpec.set(spec, p);
    return p;
  }

  private takeUniformBuffer(bytes: number): { buf: GPUBuffer; id: number } {
    const i = this.uniformFree.findIndex((b) => b.size >= bytes);
    const buf = i >= 0 ? this.uniformFree.splice(i, 1)[0] : null;
    if (buf) {
      this.uniformPending.push(buf.buf);
      return buf;
    }
    const size = 2 ** Math.ceil(Math.log2(Math.max(bytes, 4096)));
    const fresh = {
      buf: this.device.createBuffer({ label: 'uniforms', size, usage: Usage.UNIFORM | Usage.COPY_DST }),
      id: this.nextId++,
      size,
    };
    this.uniformPending.push(fresh.buf);
    this.uniformAll.set(fresh.buf, fresh);
    return fresh;
  }

  private encode(dispatches: Dispatch[], timestampWrites?: GPUComputePassTimestampWrites): void {
    this.check();
    // Everything is checked before anything is encoded, so a bad dispatch leaves nothing behind.
    for (const d of dispatches) {
      const seen = this.checked.get(d);
      if (!seen || seen.uniforms !== d.uniforms || seen.buffers !== d.buffers || seen.kernel !== d.kernel) {
        validateDispatch(d);
        const bytes = new Uint8Array(uniformBytes(d.kernel));
        packUniforms(d, new DataView(bytes.buffer));
        this.checked.set(d, { uniforms: d.uniforms, buffers: d.buffers, kernel: d.kernel, bytes });
      }
      rejectCluster(d, 'WebGPU');
      for (const b of d.buffers) {
        const buf = this.own(b);
        if (buf.size > this.maxBinding) {
          throw new Error(
            `kernel ${d.kernel.name}: buffer ${buf.label} (${buf.size} bytes) exceeds this device's maxStorageBufferBindingSize (${this.maxBinding})`,
          );
        }
      }
    }
    if (timestampWrites || dispatches.length <= RUN_CHUNK) {
      this.encodePass(dispatches, timestampWrites);
    } else {
      for (let at = 0; at < dispatches.length; at += RUN_CHUNK) {
        if (at > 0) this.flush();
        this.encodePass(dispatches.slice(at, at + RUN_CHUNK));
      }
    }
    // Many runs without a readback would each hold a uniform buffer until the next submit:
    // submitting now and then bounds the pool (submission order keeps the semantics).
    if (this.uniformPending.length >= MAX_PENDING_RUNS) this.flush();
  }

  /** One compute pass of checked dispatches, their uniforms in one pooled buffer. */
  private encodePass(dispatches: Dispatch[], timestampWrites?: GPUComputePassTimestampWrites): void {
    const offsets: number[] = [];
    let total = 0;
    for (const d of dispatches) {
      offsets.push(total);
      total += align(uniformBytes(d.kernel), this.uniformAlign);
    }
    let uniforms: { buf: GPUBuffer; id: number } | null = null;
    if (total > 0) {
      const staging = new Uint8Array(total);
      dispatches.forEach((d, i) => {
        staging.set(this.checked.get(d)!.bytes, offsets[i]);
      });
      uniforms = this.takeUniformBuffer(total);
      this.device.queue.writeBuffer(uniforms.buf, 0, staging);
    }
    const pass = this.pending.beginComputePass(timestampWrites ? { timestampWrites } : {});
    let current: Pipeline | null = null;
    dispatches.forEach((d, i) => {
      const [x, y, z] = d.groups;
      if (x === 0 || y === 0 || z === 0) return;
      const p = this.pipeline(d.kernel);
      if (p !== current) pass.setPipeline(p.pipeline);
      current = p;
      if (uniforms && d.kernel.uniforms.length > 0) {
        pass.setBindGroup(0, this.bindGroup(p, d, uniforms), [offsets[i]]);
      } else {
        pass.setBindGroup(0, this.bindGroup(p, d, null));
      }
      pass.dispatchWorkgroups(x, y, z);
    });
    pass.end();
  }

  /** The cached bind group of `d`'s buffers (and uniform buffer, bound at dynamic offsets). */
  private bindGroup(p: Pipeline, d: Dispatch, uniforms: { buf: GPUBuffer; id: number } | null): GPUBindGroup {
    const bufs = d.buffers as WebGpuBuffer[];
    let key = `${p.id}`;
    for (const b of bufs) key += `,${b.id}`;
    if (uniforms) key += `|${uniforms.id}`;
    const cached = this.bindGroups.get(key);
    if (cached) return cached;
    const entries: GPUBindGroupEntry[] = bufs.map((b, j) => ({ binding: j, resource: { buffer: b.gpu } }));
    if (uniforms) {
      entries.push({
        binding: bufs.length,
        resource: { buffer: uniforms.buf, offset: 0, size: uniformBytes(d.kernel) },
      });
    }
    // A safety valve for programs that churn through buffers without destroying them.
    if (this.bindGroups.size >= MAX_BIND_GROUPS) this.dropBindGroups();
    const group = this.device.createBindGroup({ label: d.kernel.name, layout: p.layout, entries });
    this.bindGroups.set(key, group);
    for (const b of bufs) b.bindGroupKeys.add(key);
    return group;
  }

  private dropBindGroups(): void {
    this.bindGroups.clear();
    for (const b of this.buffers) b.bindGroupKeys.clear();
  }

  /** Submits everything encoded so far. */
  private flush(): void {
    if (!this.encoder) return;
    this.device.queue.submit([this.encoder.finish()]);
    this.encoder = null;
    for (const b of this.uniformPending) this.uniformFree.push(this.uniformAll.get(b)!);
    this.uniformPending = [];
    for (const s of this.stagingPending) s.destroy();
    this.stagingPending = [];
  }

  private async mapRead(buf: GPUBuffer, what: string): Promise<ArrayBuffer> {
    try {
      await buf.mapAsync(MAP_READ);
    } catch (err) {
      buf.destroy();
      // A device lost (or destroyed) while the map was pending fails the map first, and may
      // resolve device.lost a moment later (Chromium: "Buffer was unmapped before mapping was
      // resolved"): wait for it, briefly, so that the loss is what the run reports.
      await Promise.race([this.device.lost, new Promise((r) => setTimeout(r, LOST_WAIT_MS))]);
      await this.settle();
      throw new WebGpuError(`${what} failed: ${message(err)}`);
    }
    const copy = buf.getMappedRange().slice(0);
    buf.unmap();
    buf.destroy();
    await this.settle();
    return copy;
  }

  async download(src: DeviceBuffer, byteOffset = 0, byteLength?: number): Promise<ArrayBuffer> {
    this.check();
    const buf = this.own(src);
    const length = byteLength ?? buf.size - byteOffset;
    this.range(buf, byteOffset, length, 'download of');
    if (length === 0) return new ArrayBuffer(0);
    const readback = this.device.createBuffer({
      label: `download of ${buf.label}`,
      size: length,
      usage: Usage.MAP_READ | Usage.COPY_DST,
    });
    this.pending.copyBufferToBuffer(buf.gpu, byteOffset, readback, 0, length);
    this.flush();
    return this.mapRead(readback, `download of ${buf.label}`);
  }

  async sync(): Promise<void> {
    this.check();
    this.flush();
    await this.device.queue.onSubmittedWorkDone();
    await this.settle();
  }

  async time(dispatches: Dispatch[], repeats = 1): Promise<number> {
    if (!Number.isInteger(repeats) || repeats < 1) throw new Error(`time: repeats must be an integer >= 1`);
    await this.sync();
    const all = Array.from({ length: repeats }, () => dispatches).flat();
    if (this.timing === 'wall-clock') {
      const t0 = performance.now();
      this.encode(all);
      await this.sync();
      return (performance.now() - t0) / repeats;
    }
    this.querySet ??= this.device.createQuerySet({ label: 'time', type: 'timestamp', count: 2 });
    this.encode(all, { querySet: this.querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 });
    const resolved = this.device.createBuffer({
      label: 'timestamps',
      size: 16,
      usage: Usage.QUERY_RESOLVE | Usage.COPY_SRC,
    });
    const readback = this.device.createBuffer({
      label: 'timestamps readback',
      size: 16,
      usage: Usage.MAP_READ | Usage.COPY_DST,
    });
    this.pending.resolveQuerySet(this.querySet, 0, 2, resolved, 0);
    this.pending.copyBufferToBuffer(resolved, 0, readback, 0, 16);
    this.stagingPending.push(resolved);
    this.flush();
    const [begin, end] = new BigUint64Array(await this.mapRead(readback, 'timestamp readback'));
    return end > begin ? Number(end - begin) / 1e6 / repeats : 0;
  }

  destroyBuffer(buf: DeviceBuffer): void {
    const b = this.own(buf);
    if (!this.buffers.has(b)) return;
    // A buffer referenced by unsubmitted commands would invalidate the whole submission.
    if (this.encoder && !this.destroyed) this.flush();
    b.gpu.destroy();
    this.buffers.delete(b);
    for (const key of b.bindGroupKeys) this.bindGroups.delete(key);
    b.bindGroupKeys.clear();
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.encoder = null;
    for (const b of this.buffers) b.gpu.destroy();
    this.buffers.clear();
    for (const b of [...this.uniformAll.keys(), ...this.stagingPending]) b.destroy();
    this.uniformAll.clear();
    this.bindGroups.clear();
    this.uniformFree = [];
    this.uniformPending = [];
    this.stagingPending = [];
    this.querySet?.destroy();
    this.pipelines.clear();
    this.device.destroy();
    this.gpu = null;
  }

  /** Bind groups in the cache (for tests of its invalidation). */
  get cachedBindGroups(): number {
    return this.bindGroups.size;
  }

  /** Whether Dawn's instance is still referenced (false after destroy, so Node can exit). */
  get alive(): boolean {
    return this.gpu !== null;
  }
}
