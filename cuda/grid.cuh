// Grid helpers shared by every kernel (the CUDA side of src/kernels/grid.ts). A 1-D problem larger
// than one grid dimension is spread over x and y, so kernels work with the flat block id
// x + gridDim.x * (y + gridDim.y * z) and ignore ids past the work (the grid may overshoot).
// Flat ids are 64-bit: 65535^2 blocks of 1024 threads overflow u32.
#pragma once

__device__ __forceinline__ unsigned long long flat_block_id() {
  return blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
}

// WGSL's local_invocation_index.
__device__ __forceinline__ unsigned int local_index() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

__device__ __forceinline__ unsigned long long flat_thread_id() {
  return flat_block_id() * (blockDim.x * blockDim.y * blockDim.z) + local_index();
}
