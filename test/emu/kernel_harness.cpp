// Runs one collection kernel (collect_dqn or collect_ppo: same ten bindings) on the CPU emulator
// for test/unit/kernels/collect-cuda.test.ts. Build: g++ -std=c++17 -DFOXHUNT_EMU
// -DKERNEL_SOURCE='"gen.cu"' -DKERNEL_NAME=collect_dqn -Icuda -Itest/emu/, where gen.cu
// is the backend's generated preamble followed by cuda/<name>.cu.
// Usage: kernel_harness IN.bin OUT.bin. IN.bin: ten buffers (u32 byte length, bytes) in binding
// order, the packed uniform struct (u32 length, bytes), the grid (3 x u32). OUT.bin: the five
// read-write buffers (env_f, env_i, div_window, out_f, out_i) back to back.
#include <cstdio>
#include <vector>

#include KERNEL_SOURCE

struct Launch {
  std::vector<std::vector<unsigned char>> buffers;
  Uniforms u;
};

static void entry(void* arg) {
  Launch& l = *static_cast<Launch*>(arg);
  auto f = [&](int i) { return reinterpret_cast<float*>(l.buffers[i].data()); };
  auto n = [&](int i) { return reinterpret_cast<int*>(l.buffers[i].data()); };
  KERNEL_NAME(f(0), f(1), f(2), f(3), f(4), f(5), n(6), n(7), f(8), n(9), l.u);
}

static bool read_block(FILE* in, std::vector<unsigned char>& out) {
  unsigned len = 0;
  if (std::fread(&len, 4, 1, in) != 1) return false;
  // 16 spare bytes: the kernels' float4 loads of a buffer's last elements stay inside.
  out.assign(len + 16, 0);
  return std::fread(out.data(), 1, len, in) == len;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: kernel_harness IN.bin OUT.bin\n");
    return 2;
  }
  FILE* in = std::fopen(argv[1], "rb");
  Launch l;
  l.buffers.resize(10);
  std::vector<unsigned char> uniforms;
  unsigned grid[3];
  bool ok = in != nullptr;
  for (auto& b : l.buffers) ok = ok && read_block(in, b);
  ok = ok && read_block(in, uniforms) && uniforms.size() - 16 == sizeof(Uniforms) &&
       std::fread(grid, 4, 3, in) == 3;
  if (!ok) {
    std::fprintf(stderr, "kernel_harness: %s is not a launch for this kernel\n", argv[1]);
    return 2;
  }
  std::fclose(in);
  std::memcpy(&l.u, uniforms.data(), sizeof(Uniforms));
  std::vector<size_t> sizes;
  for (auto& b : l.buffers) sizes.push_back(b.size() - 16);
#ifdef DYN_SMEM_BYTES
  // Exactly what the backend launches with, so a plan larger than its descriptor's size aborts.
  const size_t smem_bytes = DYN_SMEM_BYTES;
#else
  const size_t smem_bytes = 48 * 1024;
#endif
#ifdef CLUSTER
  // Cluster kernels (collect_dqn_cluster): CLUSTER consecutive blocks along x run as one cluster.
  const unsigned cluster = CLUSTER;
#else
  const unsigned cluster = 1;
#endif
  emu::launch({grid[0], grid[1], grid[2]}, {WG_X, WG_Y, WG_Z}, smem_bytes, entry, &l, cluster);
  FILE* out = std::fopen(argv[2], "wb");
  for (int i = 5; i < 10; i++) std::fwrite(l.buffers[i].data(), 1, sizes[i], out);
  std::fclose(out);
  return 0;
}
