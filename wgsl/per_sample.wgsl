// per_sample: prioritized replay on the device (the twin of src/kernels/per_sample.ts, which states
// the contract).
// phase 0 (one workgroup): Philox stratified thresholds, sum-tree descent, importance weights
//          normalised by their max; rows -> batchI[batch + j], weights -> batchF[batch * ROW_F + j].
// phase 1 (grid): gather of the sampled ring rows and actions into batchF[0 ..) and batchI[0 ..).
// phase 2 (one workgroup): priorities from td, last duplicate wins, state[0] = running max, then
//          the written leaves' ancestors level by level (storageBarrier between levels), the top
//          TOP_NODES nodes through workgroup memory.
// Bindings (declared by the preamble generated from src/kernels/per_sample.ts):
//   ringF: array<f32>, read; ringI: array<i32>, read; tree: array<f32>, read_write;
//   state: array<u32>, read_write ([0] max priority bits, [1] first step); batchF: array<f32>,
//   read_write; batchI: array<i32>, read_write; td: array<f32>, read
//!include philox.wgsl

var<workgroup> partial: array<f32, WG_X>;
// Phase 2's sampled rows in workgroup memory (batches up to SHARED_ROWS; larger ones read batchI):
// each sample scans the later ones for its row, four rows a load.
var<workgroup> shared_rows: array<vec4<i32>, SHARED_ROWS / 4>;
// Phase 2's top of the tree (nodes 1 .. TOP_NODES - 1).
var<workgroup> tree_top: array<f32, TOP_NODES>;

fn sampled_row(q: u32) -> i32 {
  if (u.batch <= SHARED_ROWS) {
    return shared_rows[q / 4u][q % 4u];
  }
  return batchI[u.batch + q];
}

fn beta_of(step: u32) -> f32 {
  var progress = 1.0;
  if (u.betaSteps > 0u) {
    progress = min(1.0, f32(step) / f32(u.betaSteps));
  }
  return u.betaStart + (u.betaEnd - u.betaStart) * progress;
}

// Max over the workgroup's partial values, in a fixed tree order.
fn workgroup_max(lid: u32, v: f32) -> f32 {
  partial[lid] = v;
  workgroupBarrier();
  for (var s = WG_X / 2u; s > 0u; s = s / 2u) {
    if (lid < s) {
      partial[lid] = max(partial[lid], partial[lid + s]);
    }
    workgroupBarrier();
  }
  let m = partial[0];
  workgroupBarrier();
  return m;
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn per_sample(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) lid: u32,
) {
  let B = u.batch;
  if (u.phase == 1u) {
    let t = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * WG_X + lid;
    if (t < B * ROW_F) {
      let j = t / ROW_F;
      batchF[t] = ringF[u32(batchI[B + j]) * ROW_F + (t - j * ROW_F)];
    } else if (t < B * (ROW_F + 1u)) {
      let j = t - B * ROW_F;
      batchI[j] = ringI[u32(batchI[B + j])];
    }
    return;
  }
  if (u.phase == 2u) {
    for (var j = lid; j < min(B, SHARED_ROWS); j += WG_X) {
      shared_rows[j / 4u][j % 4u] = batchI[B + j];
    }
    workgroupBarrier();
    var m = 0.0;
    for (var j = lid; j < B; j += WG_X) {
      let p = abs(td[j]) + u.eps;
      m = max(m, p);
      let row = sampled_row(j);
      var later = false;
      if (B <= SHARED_ROWS) {
        // Each run of 32 invocations scans the same rows (one broadcast vector a step on a 32-wide
        // subgroup, no early exit), from its first sample on; each counts the rows after its own.
        let lanes = vec4<u32>(0u, 1u, 2u, 3u);
        for (var v = (j & ~31u) / 4u; v < (B + 3u) / 4u; v++) {
          let q = vec4<u32>(4u * v) + lanes;
          later = later || any((q > vec4<u32>(j)) & (q < vec4<u32>(B)) & (shared_rows[v] == vec4<i32>(row)));
        }
      } else {
        for (var q = j + 1u; q < B; q++) {
          if (batchI[B + q] == row) {
            later = true;
            break;
          }
        }
      }
      if (!later) {
        tree[u.leaves + u32(row)] = pow(p, u.alpha);
      }
    }
    let most = workgroup_max(lid, m);
    if (lid == 0u) {
      state[0] = bitcast<u32>(max(bitcast<f32>(state[0]), most));
    }
    storageBarrier();
    // The written leaves' ancestors in storage while a level has more than TOP_NODES / 2 nodes;
    // then that level into workgroup memory and every node above it from there (an unchanged node
    // gets the same sum again), one workgroup barrier a level instead of a storage round trip.
    var level = 0u;
    while ((u.leaves >> level) > TOP_NODES / 2u) {
      level++;
      for (var j = lid; j < B; j += WG_X) {
        let k = (u.leaves + u32(sampled_row(j))) >> level;
        tree[k] = tree[2u * k] + tree[2u * k + 1u];
      }
      storageBarrier();
    }
    let c = u.leaves >> level;
    for (var i = lid; i < c; i += WG_X) {
      tree_top[c + i] = tree[c + i];
    }
    workgroupBarrier();
    for (var n = c / 2u; n >= 1u; n = n / 2u) {
      for (var k = n + lid; k < 2u * n; k += WG_X) {
        let v = tree_top[2u * k] + tree_top[2u * k + 1u];
        tree_top[k] = v;
        tree[k] = v;
      }
      workgroupBarrier();
    }
    return;
  }
  let step = state[1] + u.stepSlot;
  let total = tree[1];
  let beta = beta_of(step);
  let seg = total / f32(B);
  var mw = 0.0;
  // Samples j and j + WG_X descend together (their loads overlap); past the batch, the second
  // walks the tree from 0 and is dropped.
  for (var j0 = lid; j0 < B; j0 += 2u * WG_X) {
    let js = vec2<u32>(j0, j0 + WG_X);
    var x = vec2<f32>(0.0, 0.0);
    var node = vec2<u32>(1u, 1u);
    for (var h = 0u; h < 2u; h++) {
      let j = js[h];
      let w = philox4x32(vec4<u32>(REPLAY_STREAM, step, j >> 2u, 0u), vec2<u32>(u.key0, u.key1));
      let unit = u32_to_unit_float(w[j & 3u]);
      let shifted = f32(j) + unit;
      x[h] = select(0.0, shifted * seg, j < B);
    }
    while (node[0] < u.leaves) {
      let left = vec2<f32>(tree[2u * node[0]], tree[2u * node[1]]);
      let right = vec2<f32>(tree[2u * node[0] + 1u], tree[2u * node[1] + 1u]);
      for (var h = 0u; h < 2u; h++) {
        if (x[h] < left[h] || right[h] == 0.0) {
          node[h] = 2u * node[h];
        } else {
          x[h] = x[h] - left[h];
          node[h] = 2u * node[h] + 1u;
        }
      }
    }
    for (var h = 0u; h < 2u; h++) {
      let j = js[h];
      if (j >= B) {
        break;
      }
      batchI[B + j] = i32(node[h] - u.leaves);
      let prob = tree[node[h]] / total;
      let wj = pow(f32(u.size) * prob, -beta);
      batchF[B * ROW_F + j] = wj;
      mw = max(mw, wj);
    }
  }
  let most = workgroup_max(lid, mw);
  for (var j = lid; j < B; j += WG_X) {
    batchF[B * ROW_F + j] = batchF[B * ROW_F + j] / most;
  }
}
