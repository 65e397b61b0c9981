#!/bin/bash
# The GPU-host runs behind docs/RESULTS.md and docs/BENCHMARKS.md, from a bundle (`npm run bundle`):
# learning runs (3 seeds x the chosen arms, each in its own process session, killed at LEARN_END),
# parity with --record beside them, then the user benchmarks alone on the GPU until DEADLINE.
#
#   OUT=out bash scripts/gpu-runs.sh            # then: node scripts/summarise-runs.mjs out/runs
#
# env: OUT (results folder), FOXHUNT_COMMIT (default: the bundle's gitCommit), FOXHUNT (the CLI,
# default node bundle/bin/foxhunt.js), DEV (the dev harness, default node bundle/dist/dev/bench.js),
# BASE (a second bundle's CLI, timed beside this one), PARITY_KINDS (default "cuda webgpu"), ARMS /
# ARMS2 (arm names below; ARMS2 starts once at most WAVE2_AT runs are left or at LAUNCH2 s), SEEDS /
# SEEDS2, BACKEND, EXTRA (flags for every run), PARITY=1|0, BENCH=1|0, LEARN_END, DEADLINE (seconds
# from the start), RUNS (the runs' folder, default $OUT/runs; elsewhere, only their logs come back,
# packed as $OUT/runs.tgz).
T0=$(date +%s); el(){ echo $(( $(date +%s) - T0 )); }
: "${OUT:=gpu-out}" "${FOXHUNT:=node bundle/bin/foxhunt.js}" "${DEV:=node bundle/dist/dev/bench.js}" "${BACKEND:=cuda}"
: "${BENCH:=1}" "${PARITY:=1}" "${LEARN_END:=330}" "${DEADLINE:=570}"
: "${ARMS:=ppo c51 dqn}" "${SEEDS:=1 2 3}" "${LAUNCH2:=300}" "${WAVE2_AT:=3}" "${RUNS:=$OUT/runs}"
mkdir -p "$OUT" "$RUNS"
log(){ echo "[$(el)s] $*" | tee -a "$OUT/log.txt"; }
log "commit ${FOXHUNT_COMMIT:-$(node -p "require('./bundle/package.json').gitCommit" 2> /dev/null)}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> "$OUT/log.txt" 2>&1
flags(){ case $1 in
  ppo) echo "--epochs 30";;            ppo-n512) echo "--epochs 30 --rollout.episodes 512";;
  ppo-rp0-lr1e4) echo "--epochs 30 --env.riskPenaltyScale 0 --ppo.lr 1e-4";;
  ppo-clip01) echo "--epochs 30 --ppo.clip 0.1";;
  c51-v3) echo "--algo c51 --epochs 30 --dqn.vMin -3 --dqn.vMax 3";;
  c51-tgt300) echo "--algo c51 --epochs 30 --dqn.targetEvery 300";;
  c51-lr3e4) echo "--algo c51 --epochs 30 --dqn.lr 3e-4";;
  c51) echo "--algo c51 --epochs 30";; dqn) echo "--algo dqn --epochs 30";;
  c51-n5) echo "--algo c51 --epochs 30 --dqn.nStep 5";;
  c51-g95) echo "--algo c51 --epochs 30 --dqn.gamma 0.95";;
  c51-v10) echo "--algo c51 --epochs 30 --dqn.vMin -10 --dqn.vMax 10";;
  c51-spe600) echo "--algo c51 --epochs 30 --dqn.stepsPerEpoch 600";;
  c51-spe1200) echo "--algo c51 --epochs 30 --dqn.stepsPerEpoch 1200";;
  c51-spe600-lr2e4) echo "--algo c51 --epochs 30 --dqn.stepsPerEpoch 600 --dqn.lr 2e-4";;
  c51-spe600-tgt600) echo "--algo c51 --epochs 30 --dqn.stepsPerEpoch 600 --dqn.targetEvery 600";;
  c51-spe600-g90) echo "--algo c51 --epochs 30 --dqn.stepsPerEpoch 600 --dqn.gamma 0.9";;
  c51-g90) echo "--algo c51 --epochs 30 --dqn.gamma 0.9";;
  c51-lr2e4) echo "--algo c51 --epochs 30 --dqn.lr 2e-4";;
  c51-polyak) echo "--algo c51 --epochs 30 --dqn.targetEvery 0 --dqn.polyakTau 0.005";;
  c51-alpha04) echo "--algo c51 --epochs 30 --dqn.priorityAlpha 0.4";;
  c51-epsend01) echo "--algo c51 --epochs 30 --dqn.epsilonEnd 0.01";;
  c51-eps5) echo "--algo c51 --epochs 30 --dqn.epsilonDecayEpochs 5";;
  iqn) echo "--algo iqn --epochs 30";; iqn-e10) echo "--algo iqn --epochs 10";;
  c51-eps50) echo "--algo c51 --epochs 30 --dqn.epsilonDecayEpochs 50";;
  dqn-eps50) echo "--algo dqn --epochs 30 --dqn.epsilonDecayEpochs 50";;
  *) echo "unknown arm $1" >&2; return 1;; esac; }
start(){ for a in $1; do for s in $2; do
  rm -rf "$RUNS/$a-s$s" # a warm host keeps RUNS from the last call; train refuses a used folder
  setsid bash -c "exec $FOXHUNT train --backend $BACKEND --seed $s --out $RUNS/$a-s$s $(flags "$a") $EXTRA \
    > $RUNS/$a-s$s.out 2>&1" < /dev/null &
  PIDS="$PIDS $!"
done; done; log "started: $1"; }
running(){ local n=0 p; for p in $PIDS; do kill -0 "$p" 2> /dev/null && n=$((n + 1)); done; echo $n; }
PIDS=""
start "$ARMS" "$SEEDS"
if [ "$PARITY" = 1 ]; then
  for k in ${PARITY_KINDS:-cuda webgpu}; do
    timeout -k 5 200 $FOXHUNT parity --backend $k --record "$OUT/parity-kernels.json" \
      --markdown "$OUT/parity-$k.md" --json "$OUT/parity-$k.json" > "$OUT/parity-$k.out" 2>&1
    log "parity $k rc=$? $(tail -n 1 "$OUT/parity-$k.out")"
  done
fi
if [ -n "$ARMS2" ]; then
  while [ "$(el)" -lt "$LAUNCH2" ] && [ "$(running)" -gt "$WAVE2_AT" ]; do sleep 3; done
  start "$ARMS2" "${SEEDS2:-$SEEDS}"
fi
while [ "$(el)" -lt "$LEARN_END" ] && [ "$(running)" -gt 0 ]; do sleep 3; done
log "left running at the deadline: $(running)"
for p in $PIDS; do kill -9 "$p" 2> /dev/null; done; sleep 2
b(){ local lim=$1; shift
  if [ $(( $(el) + lim )) -gt "$DEADLINE" ]; then echo "SKIP (time) $*" >> "$OUT/bench.txt"; return; fi
  echo "### [$(el)s] $*" >> "$OUT/bench.txt"
  timeout -k 5 "$lim" "$@" >> "$OUT/bench.txt" 2>&1; echo "rc=$? [$(el)s]" >> "$OUT/bench.txt"; }
bb(){ [ -n "$BASE" ] && b "$@"; }
if [ "$BENCH" = 1 ]; then
  b 60 $FOXHUNT bench train --algo dqn --backend webgpu --episodes 128
  b 40 $DEV probe-validate --backend webgpu
  bb 60 $BASE bench train --algo dqn --backend webgpu --episodes 128
  b 45 $FOXHUNT bench train --algo c51 --backend cuda --episodes 128
  bb 45 $BASE bench train --algo c51 --backend cuda --episodes 128
  b 60 $FOXHUNT bench train --algo c51 --backend webgpu --episodes 128
  b 40 $FOXHUNT bench train --algo dqn --backend cuda --episodes 128
  b 60 $FOXHUNT bench train --algo iqn --backend cuda --episodes 128
  b 90 $FOXHUNT bench train --algo iqn --backend webgpu --episodes 128
  b 40 $FOXHUNT bench train --backend cuda --episodes 128
  b 45 $FOXHUNT bench train --backend webgpu --episodes 128
  b 50 $FOXHUNT bench collect --algo dqn --backend cuda --episodes 128,65536
fi
if [ "$RUNS" != "$OUT/runs" ]; then
  (cd "$RUNS" && tar czf "$OUT/runs.tgz" --exclude='*.safetensors' --exclude='*.bin' *.out */log.jsonl */*.json 2> /dev/null)
fi
log "end"
