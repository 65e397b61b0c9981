/**
 * Kernel sources of the CUDA backend, as src/kernels/sources.ts read them from the package's
 * `cuda/` folder: a kernel's `<name>.cu` plus every `.cuh` as the header table NVRTC resolves
 * `#include`s from.
 */
import { cudaSources } from '../../kernels/sources.js';
import type { KernelSource } from './compile.js';

const headers: Record<string, string> = Object.fromEntries(
  Object.entries(cudaSources).filter(([file]) => file.endsWith('.cuh')),
);

export function kernelSource(name: string): KernelSource {
  const source = cudaSources[`${name}.cu`];
  if (source === undefined) {
    throw new Error(`CUDA kernel ${name}: no cuda/${name}.cu in the package's cuda/ folder`);
  }
  return { source, headers };
}
