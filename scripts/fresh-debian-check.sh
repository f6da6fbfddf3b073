#!/usr/bin/env bash
# Runs one of the README's two commands the way a new user does: on a fresh Debian 12 (a minimal
# debootstrap of bookworm, nothing installed by hand) with only a clone of this repository's HEAD.
# Catches what the development machine hides: a package install-deps.sh forgets because something
# else pulled it in here (zlib1g-dev was one: colo failed to link).
# Usage: sudo scripts/fresh-debian-check.sh [1|2] [DIR]
#   1 (default): bash scripts/demo.sh; 2: bash scripts/test.sh (with ../shared copied beside the
#   clone when this checkout has one). DIR (default /var/tmp/colo-fresh-debian) is made anew; it
#   needs about 5 GB and deb.debian.org. Exit status: the command's.
set -euo pipefail
which=${1:-1}
dir=${2:-/var/tmp/colo-fresh-debian}
case $which in
  1) cmd="bash scripts/demo.sh" ;;
  2) cmd="bash scripts/test.sh" ;;
  *) echo "fresh-debian-check: the README command is 1 or 2, not '$which'" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { echo "fresh-debian-check: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
command -v debootstrap > /dev/null || apt-get install -y -qq debootstrap > /dev/null
if [ -e "$dir" ]; then
  if grep -qE " $dir(/| )" /proc/mounts; then
    echo "fresh-debian-check: $dir still has mounts (umount -R them first)" >&2
    exit 2
  fi
  rm -rf "$dir"
fi
echo "fresh-debian-check: debootstrap bookworm (minbase) into $dir"
debootstrap --variant=minbase bookworm "$dir" http://deb.debian.org/debian > "$dir.debootstrap.log" 2>&1 ||
  { tail -n 5 "$dir.debootstrap.log" >&2; exit 1; }
cleanup() {
  umount -R "$dir" 2>/dev/null || umount -lR "$dir" 2>/dev/null || true
}
trap cleanup EXIT
# The chroot's root a mount point of its own, as on any installed system: scripts/test.sh makes
# a private mount namespace, which needs "/" to be one. Private: nothing mounted under it
# propagates back to the host.
mount --bind "$dir" "$dir" && mount --make-private "$dir"
mount -t proc proc "$dir/proc"
# Slaves: an unmount under the chroot must never propagate back to the host's /dev or /sys.
mount --rbind /sys "$dir/sys" && mount --make-rslave "$dir/sys"
mount --rbind /dev "$dir/dev" && mount --make-rslave "$dir/dev"
cp /etc/resolv.conf "$dir/etc/resolv.conf"
# What any installed system has and minbase lacks: "localhost" (chromedriver, the web tests).
[ -e "$dir/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' > "$dir/etc/hosts"
# In root's home, as a new user most likely clones it: 0700, which command 2's tests, whose jobs
# run as nobody, must cope with (scripts/test.sh).
git clone -q "$repo" "$dir/root/colo"
if [ "$which" = 2 ] && [ -d "$repo/../shared" ]; then cp -a "$repo/../shared" "$dir/root/shared"; fi
echo "fresh-debian-check: in the chroot, from the clone ($(git -C "$repo" rev-parse --short HEAD)): $cmd"
start=$SECONDS
set +e
chroot "$dir" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  LANG=C.UTF-8 CI="${CI:-}" bash -c "cd /root/colo && $cmd"
rc=$?
set -e
echo "fresh-debian-check: README command $which exited $rc after $((SECONDS - start)) s"
exit $rc
