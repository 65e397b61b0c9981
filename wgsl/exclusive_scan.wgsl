// exclusive_scan: one level of a multi-level exclusive prefix sum of u32 (modulo 2^32, exact).
// phase 0: each workgroup scans its TILE = WG_X * ITEMS_PER_THREAD elements of `data` in place
//          (exclusive) and writes the tile's total to sums[tile];
// phase 1: each workgroup adds sums[tile] to every element of its tile.
// src/kernels/exclusive_scan.ts chains the levels (scan tiles, scan tile sums, add back).
// Bindings (declared by the preamble generated from src/kernels/exclusive_scan.ts):
//   data: array<u32>, read_write: the n elements of this level
//   sums: array<u32>, read_write: one per tile (max(1, ceil(n / TILE)) elements)
//   u: Uniforms { n, phase }
// Workgroup: WG_X threads, 1-D; workgroups spread over x and y (grid1d), flat id = tile index.
// Phase 0 loads the tile into workgroup memory coalesced, each thread scans ITEMS_PER_THREAD
// consecutive items serially, then a Hillis-Steele scan over the WG_X thread totals.
// Phase 0 with n = 0 still writes sums[0] = 0 (the total of nothing).

const TILE = WG_X * ITEMS_PER_THREAD;

var<workgroup> tile: array<u32, TILE>;
var<workgroup> partial: array<u32, WG_X>;

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn exclusive_scan(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) lid: u32,
) {
  let g = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  // ceil(n / TILE) written so that n close to 2^32 cannot overflow.
  let tiles = max(1u, u.n / TILE + select(0u, 1u, u.n % TILE != 0u));
  if (g >= tiles) {
    return;
  }
  let base = g * TILE;

  if (u.phase == 1u) {
    let offset = sums[g];
    for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
      let i = base + lid + j * WG_X;
      if (i < u.n) {
        data[i] = data[i] + offset;
      }
    }
    return;
  }

  for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
    let i = base + lid + j * WG_X;
    var v = 0u;
    if (i < u.n) {
      v = data[i];
    }
    tile[lid + j * WG_X] = v;
  }
  workgroupBarrier();

  var sum = 0u;
  for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
    let v = tile[lid * ITEMS_PER_THREAD + j];
    tile[lid * ITEMS_PER_THREAD + j] = sum;
    sum = sum + v;
  }
  partial[lid] = sum;
  workgroupBarrier();

  for (var off = 1u; off < WG_X; off = off << 1u) {
    var v = 0u;
    if (lid >= off) {
      v = partial[lid - off];
    }
    workgroupBarrier();
    partial[lid] = partial[lid] + v;
    workgroupBarrier();
  }

  let offset = partial[lid] - sum;
  for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
    tile[lid * ITEMS_PER_THREAD + j] = tile[lid * ITEMS_PER_THREAD + j] + offset;
  }
  workgroupBarrier();

  for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
    let i = base + lid + j * WG_X;
    if (i < u.n) {
      data[i] = tile[lid + j * WG_X];
    }
  }
  if (lid == WG_X - 1u) {
    sums[g] = partial[WG_X - 1u];
  }
}
