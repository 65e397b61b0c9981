/**
 * Kernel name -> descriptor + TS reference. The CPU backend runs references from here; adding a
 * kernel means adding its module to this list (and `wgsl/<name>.wgsl`, `cuda/<name>.cu`).
 */

import { adamStep } from './adam_step.js';
import { collectDqnClusterKernel, collectDqnKernel } from './collect_dqn.js';
import { collectPpoKernel } from './collect_ppo.js';
import { curiosityGather } from './curiosity_gather.js';
import { curiosityLoss } from './curiosity_loss.js';
import { deltaSum } from './delta_sum.js';
import { denseForward } from './dense_forward.js';
import { dqnInputs } from './dqn_inputs.js';
import { dqnLoss } from './dqn_loss.js';
import { dqnTargetUpdate } from './dqn_target_update.js';
import { duelingCombineKernel } from './dueling_combine.js';
import { exclusiveScan } from './exclusive_scan.js';
import { iqnLoss } from './iqn_loss.js';
import { iqnMix } from './iqn_mix.js';
import { iqnTaus } from './iqn_taus.js';
import { mlpBackward } from './mlp_backward.js';
import { mlpChainForward } from './mlp_chain_forward.js';
import { mlpDeltaChain } from './mlp_delta_chain.js';
import { mlpForward } from './mlp_forward.js';
import { perSample } from './per_sample.js';
import { philoxStream } from './philox_stream.js';
import { ppoGather } from './ppo_gather.js';
import { ppoLoss } from './ppo_loss.js';
import type { Kernel } from './reference.js';
import { replayInsert } from './replay_insert.js';
import type { KernelSpec } from './spec.js';
import { validateDqnClusterKernel, validateDqnKernel } from './validate_dqn.js';
import { validatePolicyKernel } from './validate_policy.js';

// The learners' kernels (src/device/learn.ts; dqn_loss: the DQN family's loss head).
const learnerKernels = [
  ppoGather,
  mlpForward,
  mlpChainForward,
  ppoLoss,
  mlpBackward,
  mlpDeltaChain,
  adamStep,
  curiosityGather,
  curiosityLoss,
  dqnLoss,
  dqnTargetUpdate,
  duelingCombineKernel,
  dqnInputs,
  deltaSum,
  iqnLoss,
  iqnTaus,
  iqnMix,
  replayInsert,
  perSample,
];

export const kernels: Readonly<Record<string, Kernel>> = Object.fromEntries(
  [
    philoxStream,
    denseForward,
    exclusiveScan,
    collectDqnKernel,
    collectDqnClusterKernel,
    collectPpoKernel,
    validatePolicyKernel,
    validateDqnKernel,
    validateDqnClusterKernel,
    ...learnerKernels,
  ].map((k) => [k.spec.name, k]),
);

export function kernelFor(spec: KernelSpec): Kernel {
  const k = kernels[spec.name];
  if (!k) throw new Error(`no kernel named ${spec.name} in src/kernels/registry.ts`);
  return k;
}
