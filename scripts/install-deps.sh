#!/usr/bin/env bash
# Installs every build and test dependency from Debian 12's apt repositories (nothing else).
set -euo pipefail
pkgs=(g++ cmake ninja-build pkg-config
      nlohmann-json3-dev libfmt-dev libcli11-dev libtomlplusplus-dev libeigen3-dev libsqlite3-dev
      libgtest-dev libgmock-dev libbenchmark-dev
      coinor-libclp-dev                   # COIN-OR Clp: the linear programme of the simulator's packing bound
      zlib1g-dev                          # CoinUtils links -lz but its -dev package does not pull it in
      help2man                            # the package's manual pages, from colo's and colod's --help
      file dpkg-dev                       # CPack's .deb: its shared-library dependencies (file, dpkg-shlibdeps)
      clang-14 libclang-rt-14-dev   # libFuzzer for scripts/fuzz.sh (ctest's fuzz_smoke)
      python3-torch python3-torchvision   # the CPU-only probe (python/colo_probe) and its tests
      prometheus curl                     # promtool + a real server scraping colod's /metrics (tests)
      chromium chromium-driver python3-selenium   # headless browser tests of the dashboard and reports
      slurmctld slurmd slurm-client munge)        # a real Slurm 22.05 on localhost (tests/slurm)
missing=()
for p in "${pkgs[@]}"; do
  # read whole, then compared (`| grep -q` can end the pipe early: SIGPIPE under pipefail)
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
# Some of these packages ship daemons that Debian starts and enables on installation (Prometheus
# listening on every interface at :9090, munge, slurmctld, slurmd). The tests run their own
# instances on private sockets and ports; on a machine that did not have them, they stay off:
# not started during the installation (policy-rc.d), not enabled afterwards.
no_start=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
  no_start=/usr/sbin/policy-rc.d
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$no_start" >/dev/null
  $SUDO chmod 755 "$no_start"
fi
trap '[ -z "$no_start" ] || $SUDO rm -f "$no_start"' EXIT
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
for unit in prometheus munge slurmctld slurmd; do
  if [[ " ${missing[*]} " == *" $unit "* ]] && command -v systemctl >/dev/null; then
    # (systemctl edits the unit links offline too, where systemd is not running)
    $SUDO systemctl disable "$unit.service" >/dev/null 2>&1 || true
    echo "install-deps: $unit installed for the tests, left disabled (systemctl enable --now $unit to use it)"
  fi
done
