#!/usr/bin/env bash
# Installs the system packages foxhunt's tests need on Debian 12 (bookworm):
# Mesa 25 lavapipe from bookworm-backports (Vulkan for Dawn/WebGPU on a CPU-only
# machine) and Debian's Chromium (headless WebGPU tests in a real browser).
# Safe to run twice. Needs root (or sudo); elsewhere it only checks.
set -euo pipefail

need_install=0
command -v chromium >/dev/null 2>&1 || need_install=1
ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1 || need_install=1
if [ "$need_install" = 0 ]; then
  echo "setup-system: lavapipe and chromium already present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "setup-system: need root to install mesa-vulkan-drivers (bookworm-backports) and chromium" >&2
    exit 1
  fi
fi

if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
  echo "deb http://deb.debian.org/debian bookworm-backports main" | $SUDO tee /etc/apt/sources.list.d/backports.list >/dev/null
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q -t bookworm-backports mesa-vulkan-drivers libvulkan1
$SUDO apt-get install -y -q chromium
echo "setup-system: done"
