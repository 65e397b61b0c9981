/**
 * The CPU backend: buffers are ArrayBuffers and `run()` calls each kernel's TS reference
 * (src/kernels/registry.ts) with typed-array views per binding type, in order. It is the
 * executable definition every GPU twin is checked against, and the fallback where no GPU is.
 * Everything is synchronous; `time()` is host wall clock.
 */

import type { TypedArray } from '../../kernels/reference.js';
import { kernelFor } from '../../kernels/registry.js';
import type { Backend, BackendInfo, DeviceBuffer, Dispatch, ScalarType } from '../types.js';
import { rejectCluster, validateDispatch } from '../uniforms.js';

class CpuBuffer implements DeviceBuffer {
  readonly bytes: ArrayBuffer;
  readonly views: Record<ScalarType, TypedArray>;
  constructor(
    readonly owner: CpuBackend,
    readonly size: number,
    readonly label: string,
  ) {
    // Whole 4-byte elements, as on the GPU backends (which allocate in multiples of 4).
    this.bytes = new ArrayBuffer(Math.ceil(size / 4) * 4);
    this.views = {
      f32: new Float32Array(this.bytes),
      u32: new Uint32Array(this.bytes),
      i32: new Int32Array(this.bytes),
    };
  }
}

const now = () => globalThis.performance.now();

export class CpuBackend implements Backend {
  readonly kind = 'cpu' as const;
  readonly info: BackendInfo = {
    kind: 'cpu',
    device: 'CPU reference',
    driver:
      typeof process !== 'undefined' && process.versions?.node
        ? `Node ${process.versions.node}`
        : 'JavaScript engine',
    limits: { timing: 'wall-clock' },
  };
  private destroyed = false;

  private own(buf: DeviceBuffer): CpuBuffer {
    if (this.destroyed) throw new Error('cpu backend used after destroy()');
    if (!(buf instanceof CpuBuffer) || buf.owner !== this) {
      throw new Error(`buffer ${buf.label} does not belong to this cpu backend`);
    }
    return buf;
  }

  private range(buf: CpuBuffer, offset: number, length: number, what: string): void {
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

  createBuffer(byteSize: number, label: string): DeviceBuffer {
    if (this.destroyed) throw new Error('cpu backend used after destroy()');
    if (!Number.isInteger(byteSize) || byteSize < 0) throw new Error(`buffer ${label}: bad size ${byteSize}`);
    return new CpuBuffer(this, byteSize, label);
  }

  upload(dst: DeviceBuffer, data: ArrayBufferView, dstByteOffset = 0): void {
    const buf = this.own(dst);
    this.range(buf, dstByteOffset, data.byteLength, 'upload to');
    new Uint8Array(buf.bytes, dstByteOffset, data.byteLength).set(
      new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
    );
  }

  copy(src: DeviceBuffer, dst: DeviceBuffer, byteLength: number, srcByteOffset = 0, dstByteOffset = 0): void {
    const s = this.own(src);
    const d = this.own(dst);
    if (s === d) throw new Error(`copy: ${s.label} onto itself is not allowed (WebGPU forbids it too)`);
    this.range(s, srcByteOffset, byteLength, 'copy from');
    this.range(d, dstByteOffset, byteLength, 'copy to');
    new Uint8Array(d.bytes, dstByteOffset, byteLength).set(
      new Uint8Array(s.bytes, srcByteOffset, byteLength),
    );
  }

  run(dispatches: Dispatch[]): void {
    // Validate all first: like a GPU submission, a bad dispatch runs nothing.
    for (const d of dispatches) {
      validateDispatch(d);
      rejectCluster(d, 'CPU');
      kernelFor(d.kernel);
      for (const b of d.buffers) this.own(b);
    }
    for (const d of dispatches) {
      if (d.groups.some((g) => g === 0)) continue;
      const views = d.buffers.map((b, i) => (b as CpuBuffer).views[d.kernel.bindings[i].type]);
      kernelFor(d.kernel).reference(views, d.uniforms, d.groups);
    }
  }

  async download(src: DeviceBuffer, byteOffset = 0, byteLength?: number): Promise<ArrayBuffer> {
    const buf = this.own(src);
    const length = byteLength ?? buf.size - byteOffset;
    this.range(buf, byteOffset, length, 'download of');
    return buf.bytes.slice(byteOffset, byteOffset + length);
  }

  async sync(): Promise<void> {
    if (this.destroyed) throw new Error('cpu backend used after destroy()');
  }

  async time(dispatches: Dispatch[], repeats = 1): Promise<number> {
    if (!Number.isInteger(repeats) || repeats < 1) throw new Error('time: repeats must be an integer >= 1');
    const t0 = now();
    for (let r = 0; r < repeats; r++) this.run(dispatches);
    return (now() - t0) / repeats;
  }

  destroyBuffer(buf: DeviceBuffer): void {
    this.own(buf);
  }

  destroy(): void {
    this.destroyed = true;
  }
}

export function createCpuBackend(): CpuBackend {
  return new CpuBackend();
}
