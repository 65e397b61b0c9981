/**
 * Flat parameter layouts of every network (SPEC 8). One f32 buffer per network: for each
 * layer, the weight `[out, in]` row-major, then the bias `[out]`, layers in the order listed.
 * The tensor names are the safetensors names of checkpoints (see docs/CHECKPOINTS.md), chosen
 * so that a PyTorch module with the same attribute names loads them directly.
 * Kernels receive these offsets as data (generated from this file), never hand-written.
 */

export type Activation = 'relu' | 'leaky' | 'none';

export interface LayerSpec {
  /** Tensor name prefix: `${name}.weight`, `${name}.bias`. */
  name: string;
  in: number;
  out: number;
  /** Activation applied to this layer's output. */
  act: Activation;
}

export interface Layer extends LayerSpec {
  /** Offset of the weight `[out, in]` in the flat buffer, in floats. */
  wOffset: number;
  /** Offset of the bias `[out]` in the flat buffer, in floats. */
  bOffset: number;
}

export interface NetLayout {
  /** Network kind, e.g. `dueling`, `ppo_actor`. */
  kind: string;
  layers: Layer[];
  /** Total floats in the flat buffer. */
  size: number;
}

export const LEAKY_SLOPE = 0.01;
export const STATE_DIM = 54;
export const MARKET_FEATURES = 51;
export const NUM_ACTIONS = 45;
export const CURIOSITY_IN = 35;
export const CURIOSITY_OUT = 32;
/** Hidden width of the curiosity model. */
export const CURIOSITY_HIDDEN = 64;

export function buildLayout(kind: string, specs: LayerSpec[]): NetLayout {
  let offset = 0;
  const layers: Layer[] = specs.map((s) => {
    const wOffset = offset;
    offset += s.in * s.out;
    const bOffset = offset;
    offset += s.out;
    return { ...s, wOffset, bOffset };
  });
  return { kind, layers, size: offset };
}

export function layerByName(layout: NetLayout, name: string): Layer {
  const layer = layout.layers.find((l) => l.name === name);
  if (!layer) throw new Error(`layout ${layout.kind} has no layer ${name}`);
  return layer;
}

/** Head of a DQN-family net: plain (one value per action), C51 (atoms per action), IQN. */
export type QHead = 'plain' | 'c51' | 'iqn';

/**
 * Dueling Q network: trunk 54 -> 256 -> 256 LeakyReLU; value 256 -> 128 -> (1 | atoms);
 * advantage 256 -> 128 -> (45 | 45 * atoms). IQN adds `tau_embed` (cosine features -> 256,
 * ReLU), multiplied elementwise into the trunk output before both streams.
 */
export function duelingLayout(head: QHead = 'plain', atoms = 51, iqnEmbed = 64): NetLayout {
  const outMul = head === 'c51' ? atoms : 1;
  const specs: LayerSpec[] = [
    { name: 'shared_layers.0', in: STATE_DIM, out: 256, act: 'leaky' },
    { name: 'shared_layers.1', in: 256, out: 256, act: 'leaky' },
  ];
  if (head === 'iqn') specs.push({ name: 'tau_embed', in: iqnEmbed, out: 256, act: 'relu' });
  specs.push(
    { name: 'value_stream.0', in: 256, out: 128, act: 'leaky' },
    { name: 'value_stream.1', in: 128, out: outMul, act: 'none' },
    { name: 'advantage_stream.0', in: 256, out: 128, act: 'leaky' },
    { name: 'advantage_stream.1', in: 128, out: NUM_ACTIONS * outMul, act: 'none' },
  );
  return buildLayout(head === 'plain' ? 'dueling' : `dueling_${head}`, specs);
}

/** PPO actor: 54 -> 128 -> 64 -> 45 logits, ReLU. */
export function ppoActorLayout(): NetLayout {
  return buildLayout('ppo_actor', [
    { name: 'policy_layer_0', in: STATE_DIM, out: 128, act: 'relu' },
    { name: 'policy_layer_1', in: 128, out: 64, act: 'relu' },
    { name: 'policy_output', in: 64, out: NUM_ACTIONS, act: 'none' },
  ]);
}

/** PPO critic: 54 -> 512 -> 384 -> 256 -> 128 -> 64 -> 1, ReLU. */
export function ppoCriticLayout(): NetLayout {
  return buildLayout('ppo_critic', [
    { name: 'value_layer_0', in: STATE_DIM, out: 512, act: 'relu' },
    { name: 'value_layer_1', in: 512, out: 384, act: 'relu' },
    { name: 'value_layer_2', in: 384, out: 256, act: 'relu' },
    { name: 'value_layer_3', in: 256, out: 128, act: 'relu' },
    { name: 'value_layer_4', in: 128, out: 64, act: 'relu' },
    { name: 'value_output', in: 64, out: 1, act: 'none' },
  ]);
}

/** Curiosity forward model: 35 -> 64 LeakyReLU -> 32. */
export function curiosityLayout(): NetLayout {
  return buildLayout('curiosity', [
    { name: 'fc1', in: CURIOSITY_IN, out: CURIOSITY_HIDDEN, act: 'leaky' },
    { name: 'fc2', in: CURIOSITY_HIDDEN, out: CURIOSITY_OUT, act: 'none' },
  ]);
}

/** Philox init ids (second counter word) so that each network's init stream is distinct. */
export const NetId = { QOnline: 0, Actor: 2, Critic: 3, Curiosity: 4 } as const;
