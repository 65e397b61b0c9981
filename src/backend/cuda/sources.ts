/**
 * Kernel sources of the CUDA backend, from the module generated at build time out of `cuda/*.cu`
 * and `cuda/*.cuh` (scripts/gen-kernels.mjs), so nothing reads kernel files at run time: a
 * kernel's `<name>.cu` plus every `.cuh` as the header table NVRTC resolves `#include`s from.
 */
import { cudaSources } from '../../kernels/sources.generated.js';
import type { KernelSource } from './compile.js';

const headers: Record<string, string> = Object.fromEntries(
  Object.entries(cudaSources).filter(([file]) => file.endsWith('.cuh')),
);

export function kernelSource(name: string): KernelSource {
  const source = cudaSources[`${name}.cu`];
  if (source === undefined) {
    throw new Error(`CUDA kernel ${name}: no cuda/${name}.cu in the generated sources (npm run gen:kernels)`);
  }
  return { source, headers };
}
