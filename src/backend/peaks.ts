/**
 * The device's arithmetic peaks, from the vendor's datasheets: what `foxhunt bench` divides its
 * achieved FLOP/s by. One row per device class, matched on what the backend reports (the device
 * name, and on CUDA the compute capability). Dense figures: NVIDIA's datasheets print the tensor
 * cores' peaks "with sparsity", twice the dense rate; the rows hold half of those. Boost clocks.
 *
 * A device without a row gets no peaks (bench prints n/a); add its row here with its source.
 */
import type { Backend } from './types.js';

export interface DevicePeaks {
  /** The device class, e.g. `NVIDIA H100 / H200 SXM (sm_90)`. */
  name: string;
  /** f32 FMA peak without tensor cores, FLOP/s (2 per fused multiply-add). */
  f32: number;
  /** Dense TF32 tensor-core peak (f32 sums), FLOP/s. */
  tf32?: number;
  /** Where the figures come from. */
  source: string;
}

interface PeaksRow extends DevicePeaks {
  /** Matched against the device name the backend reports (CUDA's device name, WebGPU's adapter). */
  device: RegExp;
  /** CUDA compute capability the row requires where the backend reports one (`9.0`). */
  computeCapability?: string;
}

const T = 1e12;

/** First match wins: the more specific names (PCIe) come before the family's. */
export const PEAKS: readonly PeaksRow[] = [
  {
    device: /H100.*(PCIe)/i,
    computeCapability: '9.0',
    name: 'NVIDIA H100 PCIe (sm_90)',
    f32: 51.2 * T,
    tf32: 378 * T,
    source: 'NVIDIA H100 Tensor Core GPU datasheet, PCIe column (TF32 756 with sparsity)',
  },
  {
    device: /\b(GH200|H200|H100)\b(?!.*\b(NVL|PCIe)\b)/i,
    computeCapability: '9.0',
    name: 'NVIDIA H100 / H200 SXM (sm_90)',
    f32: 66.9 * T,
    tf32: 494.7 * T,
    source:
      'NVIDIA H100 and H200 Tensor Core GPU datasheets, SXM columns (FP32 67, TF32 989 with sparsity); 132 SMs x 128 FP32 lanes x 2 x 1,980 MHz = 66.9 TFLOP/s',
  },
  {
    device: /\bA100\b/i,
    computeCapability: '8.0',
    name: 'NVIDIA A100 (sm_80)',
    f32: 19.5 * T,
    tf32: 156 * T,
    source: 'NVIDIA A100 Tensor Core GPU datasheet (FP32 19.5, TF32 156 dense)',
  },
  {
    device: /\bL4\b/i,
    computeCapability: '8.9',
    name: 'NVIDIA L4 (sm_89)',
    f32: 30.3 * T,
    tf32: 60 * T,
    source: 'NVIDIA L4 Tensor Core GPU datasheet (FP32 30.3, TF32 120 with sparsity)',
  },
  {
    device: /RTX 4090/i,
    computeCapability: '8.9',
    name: 'NVIDIA GeForce RTX 4090 (sm_89)',
    f32: 82.6 * T,
    tf32: 82.6 * T,
    source: 'NVIDIA Ada Lovelace architecture whitepaper, appendix A (FP32 82.6, TF32 82.6 dense)',
  },
];

/** The peaks of the backend's device, or undefined where no row matches (and on the CPU). */
export function devicePeaks(backend: Pick<Backend, 'kind' | 'info'>): DevicePeaks | undefined {
  if (backend.kind === 'cpu' || backend.info.limits.software === 'yes') return undefined;
  const cc = backend.info.limits.computeCapability;
  const row = PEAKS.find(
    (r) =>
      r.device.test(backend.info.device) &&
      (cc === undefined || r.computeCapability === undefined || String(cc) === r.computeCapability),
  );
  if (!row) return undefined;
  const { device: _d, computeCapability: _c, ...peaks } = row;
  return peaks;
}

/** The tensor-core peak of a precision (`tf32`), undefined for exact f32. */
export function tensorPeak(peaks: DevicePeaks | undefined, precision: string): number | undefined {
  if (!peaks) return undefined;
  return precision === 'tf32' ? peaks.tf32 : undefined;
}
