#!/usr/bin/env bash
# The probe on PyTorch 2 without a GPU. Debian 12's apt has PyTorch 1.13 only; Debian 13 ("trixie")
# has python3-torch 2.6 and python3-torchvision 0.21 (CPU builds, Python 3.13). This makes a trixie
# chroot with them from Debian's own archive (debootstrap; root and deb.debian.org needed; about
# 4 minutes and 1.7 GB the first time) and runs the probe there, so what CI checks on 1.13 is
# checked on 2.x too (docs/ESTIMATION.md, "The probe on PyTorch 2").
#   bash scripts/pytorch2-chroot.sh setup             make DIR (once) and mount /proc, /sys, /dev, /tmp
#                                                     and the repository's parent folder into it
#   bash scripts/pytorch2-chroot.sh test [ARGS]       tests/probe under PyTorch 2 (ARGS: unittest's, e.g.
#                                                     test_script.Script)
#   bash scripts/pytorch2-chroot.sh python [ARGS]     the chroot's python3, in the current folder
#   bash scripts/pytorch2-chroot.sh teardown          unmount
# DIR is $COLO_PYTORCH2_ROOT, else /var/tmp/colo-trixie. `setup` also writes DIR.python3, a host
# executable for COLO_PYTHON (colo estimate --probe/--script and the eval then probe on PyTorch 2).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${COLO_PYTORCH2_ROOT:-/var/tmp/colo-trixie}
parent=$(dirname "$root")
cmd=${1:-}
[ -n "$cmd" ] || { echo "usage: $0 setup|test [ARGS]|python [ARGS]|teardown" >&2; exit 2; }
shift

mounted() { mountpoint -q "$dir$1"; }
# PyTorch 2, and what the real-scripts campaign's scripts import (scripts/probe-real-scripts.sh)
packages=(python3 python3-torch python3-torchvision python3-numpy python3-pil python3-six python3-yaml
          python3-packaging python3-tqdm python3-fsspec)

setup() {
  [ "$(id -u)" = 0 ] || { echo "$0: setup needs root (debootstrap, chroot, mount)" >&2; exit 2; }
  command -v debootstrap > /dev/null || apt-get install -y debootstrap
  if [ ! -x "$dir/usr/bin/python3" ]; then
    debootstrap --variant=minbase --include="$(IFS=,; echo "${packages[*]}")" trixie "$dir" http://deb.debian.org/debian
  else  # a chroot made by an older version of this script: add what the list has gained since
    local missing=() p
    for p in "${packages[@]}"; do
      chroot "$dir" dpkg-query -W -f '${Status}' "$p" 2> /dev/null | grep -q 'ok installed' || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
      cp -L /etc/resolv.conf "$dir/etc/resolv.conf"
      chroot "$dir" apt-get update -q && chroot "$dir" apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
  fi
  mkdir -p "$dir/proc" "$dir/sys" "$dir/dev" "$dir/tmp" "$dir$parent"
  mounted /proc || mount -t proc proc "$dir/proc"
  mounted /sys || mount --rbind /sys "$dir/sys"
  mounted /dev || mount --rbind /dev "$dir/dev"
  mounted /tmp || mount --bind /tmp "$dir/tmp"
  mounted "$parent" || mount --bind "$parent" "$dir$parent"
  cat > "$dir.python3" <<EOF
#!/bin/sh
# python3 of the PyTorch 2 chroot $dir, run in the caller's folder (scripts/pytorch2-chroot.sh)
exec chroot "$dir" /bin/sh -c 'cd "\$0" && exec python3 "\$@"' "\$PWD" "\$@"
EOF
  chmod +x "$dir.python3"
  "$dir.python3" -c 'import torch, torchvision, sys; print("PyTorch", torch.__version__, "torchvision", torchvision.__version__, "Python", sys.version.split()[0])'
}

case "$cmd" in
  setup) setup ;;
  test)
    { mounted "$parent" && mounted /tmp && [ -x "$dir.python3" ]; } || setup > /dev/null
    cd "$root/tests/probe"
    [ $# -gt 0 ] || set -- discover -p 'test_*.py'
    PYTHONDONTWRITEBYTECODE=1 CUDA_VISIBLE_DEVICES= exec "$dir.python3" -m unittest "$@" ;;
  python)
    { mounted "$parent" && mounted /tmp && [ -x "$dir.python3" ]; } || setup > /dev/null
    exec "$dir.python3" "$@" ;;
  teardown)
    for m in "$parent" /tmp /dev /sys /proc; do
      mounted "$m" && umount -R "$dir$m"
    done
    true ;;
  *) echo "usage: $0 setup|test [ARGS]|python [ARGS]|teardown" >&2; exit 2 ;;
esac
