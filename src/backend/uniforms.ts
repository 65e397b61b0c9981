/**
 * Checks a dispatch against its KernelSpec and packs its uniforms into the 4-byte-per-field
 * struct every GPU twin reads (WGSL `struct Uniforms`, CUDA struct by value). Shared by the
 * backends so that a wrong buffer count or an out-of-range uniform fails the same way everywhere,
 * before anything reaches a driver.
 */
import { MAX_GROUPS_PER_DIM } from '../kernels/grid.js';
import type { Dispatch, KernelSpec, ScalarType } from './types.js';

/** Bytes of the uniform struct (4 per field, no padding: every field is a 4-byte scalar). */
export function uniformBytes(spec: KernelSpec): number {
  return spec.uniforms.length * 4;
}

function checkScalar(kernel: string, name: string, type: ScalarType, value: unknown): number {
  if (typeof value !== 'number' || Number.isNaN(value)) {
    throw new Error(`kernel ${kernel}: uniform ${name} must be a number, got ${String(value)}`);
  }
  if (type === 'u32' && !(Number.isInteger(value) && value >= 0 && value <= 0xffffffff)) {
    throw new Error(`kernel ${kernel}: uniform ${name} must be a u32, got ${value}`);
  }
  if (type === 'i32' && !(Number.isInteger(value) && value >= -(2 ** 31) && value < 2 ** 31)) {
    throw new Error(`kernel ${kernel}: uniform ${name} must be an i32, got ${value}`);
  }
  return value;
}

/** Writes the uniforms of `d` at `byteOffset` of `view`, little-endian, in `spec.uniforms` order. */
export function packUniforms(d: Dispatch, view: DataView, byteOffset = 0): void {
  const { kernel } = d;
  kernel.uniforms.forEach((u, i) => {
    const v = checkScalar(kernel.name, u.name, u.type, d.uniforms[u.name]);
    const at = byteOffset + 4 * i;
    if (u.type === 'u32') view.setUint32(at, v, true);
    else if (u.type === 'i32') view.setInt32(at, v, true);
    else view.setFloat32(at, v, true);
  });
}

const namesOf = new WeakMap<KernelSpec, Set<string>>();

/**
 * The spec's uniform names as a set, made once per spec: a WebGPU update validates every dispatch
 * of every run (17,500 per default PPO update), and mlp_backward has 88 uniforms, so a scan of the
 * list per key cost ~3,900 string compares per dispatch.
 */
function uniformNames(spec: KernelSpec): Set<string> {
  let names = namesOf.get(spec);
  if (!names) {
    names = new Set(spec.uniforms.map((u) => u.name));
    namesOf.set(spec, names);
  }
  return names;
}

/** Throws one line naming the kernel when a dispatch does not match its spec. */
export function validateDispatch(d: Dispatch): void {
  const { kernel } = d;
  if (d.buffers.length !== kernel.bindings.length) {
    const names = kernel.bindings.map((b) => b.name).join(', ');
    throw new Error(
      `kernel ${kernel.name}: expected ${kernel.bindings.length} buffers (${names}), got ${d.buffers.length}`,
    );
  }
  for (const u of kernel.uniforms) checkScalar(kernel.name, u.name, u.type, d.uniforms[u.name]);
  const names = uniformNames(kernel);
  for (const key in d.uniforms) {
    if (!names.has(key)) throw new Error(`kernel ${kernel.name}: unknown uniform ${key}`);
  }
  for (const g of d.groups) {
    if (!Number.isInteger(g) || g < 0 || g > MAX_GROUPS_PER_DIM) {
      throw new Error(
        `kernel ${kernel.name}: workgroup counts must be integers in [0, 65535], got ${d.groups}`,
      );
    }
  }
  const cluster = kernel.cluster;
  if (
    cluster &&
    d.groups.some((g, i) => !Number.isInteger(cluster[i]) || cluster[i] < 1 || g % cluster[i] !== 0)
  ) {
    throw new Error(
      `kernel ${kernel.name}: the grid ${d.groups} must be a multiple of its cluster ${cluster}`,
    );
  }
  checkNoWritableAliasing(d);
}

/** Throws for a kernel that needs CUDA thread-block clusters on a backend without them. */
export function rejectCluster(d: Dispatch, backend: string): void {
  if (d.kernel.cluster) {
    throw new Error(
      `kernel ${d.kernel.name} runs in CUDA thread-block clusters (sm_90+) and has no ${backend} twin: use --backend cuda on an H100/H200 or another variant`,
    );
  }
}

/**
 * Throws when one buffer is bound twice in a dispatch and one of the bindings is writable:
 * WebGPU rejects such aliasing, so no backend accepts it (kernels stay portable).
 */
export function checkNoWritableAliasing(d: Dispatch): void {
  d.buffers.forEach((b, i) => {
    for (let j = i + 1; j < d.buffers.length; j++) {
      if (d.buffers[j] !== b) continue;
      const [p, q] = [d.kernel.bindings[i], d.kernel.bindings[j]];
      if (p.access === 'read_write' || q.access === 'read_write') {
        throw new Error(
          `kernel ${d.kernel.name}: buffer ${b.label} is bound as both ${p.name} and ${q.name}, one of them writable`,
        );
      }
    }
  });
}
