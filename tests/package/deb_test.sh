#!/usr/bin/env bash
# The .deb end to end: build it (scripts/package.sh), check what it holds, unpack it and run
# colod from the unpacked tree on fake GPUs (jobs, /metrics, the dashboard's files all from the
# package, none from this source tree); in CI as root, also `dpkg -i` it, start /usr/bin/colod,
# and remove it again. Waits poll observed state (web.addr, a job's state) under a deadline.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
tmp=$(mktemp -d /tmp/colo-deb.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "deb_test: FAIL: $*" >&2; exit 1; }
# Pipelines into grep read all their input (no `grep -q`): under pipefail a writer killed by
# SIGPIPE after an early match would fail the check.
wait_for() {  # wait_for WHAT SECONDS COMMAND...
  local what=$1 secs=$2 end
  shift 2
  end=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || fail "timed out waiting for $what"
    sleep 0.1
  done
}

deb=$(bash scripts/package.sh "${COLO_PKG_BUILD_DIR:-build-pkg}" | tail -1)
[ -f "$deb" ] || fail "scripts/package.sh did not produce a .deb"
echo "deb_test: $deb"
dpkg-deb --info "$deb" | grep "Package: colo" >/dev/null || fail "not a colo package"
dpkg-deb --info "$deb" | grep "Depends:.*libsqlite3" >/dev/null || fail "shlibdeps did not name libsqlite3"
contents=$(dpkg-deb --contents "$deb")
for f in ./usr/bin/colo ./usr/bin/colod ./usr/lib/colo/colo-fake-job ./usr/lib/colo/libcolo-fake-nvml.so.1 ./usr/lib/colo/libcolo-fake-dcgm.so.1 \
         ./lib/systemd/system/colod.service ./etc/colo/colod.toml ./usr/share/colo/web/index.html \
         ./usr/share/colo/web/static/vendor/uplot/LICENSE ./usr/share/colo/data/carma/workloads.csv \
         ./usr/share/colo/data/gpumemnet/LICENSE ./usr/share/colo/models/gpumemnet/mlp-1gib.json \
         ./usr/share/colo/calibration/a100-40gb.json ./usr/share/colo/python/colo_probe/__main__.py \
         ./usr/share/colo/slurm/job_submit.lua ./lib/systemd/system/colo-slurm-recover.service \
         ./lib/systemd/system/colo-slurm-node-weight.service; do
  grep -q " $f\$" <<<"$contents" || grep " $f -> " <<<"$contents" >/dev/null || fail "the package lacks $f"
done
grep -q "__pycache__" <<<"$contents" && fail "the package carries __pycache__"
# Manual pages, made from the packaged programs' own --help (help2man): every option is there.
for page in usr/share/man/man1/colo.1.gz usr/share/man/man8/colod.8.gz; do
  grep -q " ./$page\$" <<<"$contents" || fail "the package lacks $page"
done
mandir=$tmp/man
mkdir -p "$mandir"
dpkg-deb -x "$deb" "$mandir"
zcat "$mandir/usr/share/man/man1/colo.1.gz" | grep -F -- '\-\-socket' >/dev/null || fail "colo.1 does not list --socket"
zcat "$mandir/usr/share/man/man8/colod.8.gz" | grep -F -- '\-\-fake\-gpus' >/dev/null || fail "colod.8 does not list --fake-gpus"
[ "$("$mandir/usr/bin/colo" --version)" = "colo $(sed -n 's/^project(colo VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)" ] ||
  fail "colo --version does not print the project's version"
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles | grep -x /etc/colo/colod.toml >/dev/null || fail "colod.toml is not a conffile"

# run_from PREFIX: colod and colo from PREFIX/usr/bin on fake GPUs, a job, /metrics, the dashboard.
run_from() {
  local bin=$1/usr/bin state=$tmp/state-$2
  mkdir -p "$state"
  "$bin/colod" --fake-gpus 2x40GiB --state-dir "$state" --metrics-listen 127.0.0.1:0 >"$tmp/colod-$2.log" 2>&1 &
  pids+=($!)
  wait_for "web.addr ($2)" 60 test -s "$state/web.addr"
  local addr
  addr=$(cat "$state/web.addr")
  local id
  id=$("$bin/colo" --socket "$state/colo.sock" submit --gpus 1 --mem 4GiB --name deb -- \
       "$1/usr/lib/colo/colo-fake-job" --mem 2GiB --hold inf)
  running() { "$bin/colo" --socket "$state/colo.sock" show "$id" --json | grep '^  "state": "running"' >/dev/null; }
  wait_for "job $id running ($2)" 60 running
  # /metrics is rendered from colod's latest sample, which may trail the job's recorded state by
  # a tick: wait for what it shows, not for a duration.
  metrics_running() { curl -sf "http://$addr/metrics" | grep '^colo_jobs{state="running"} 1$' >/dev/null; }
  wait_for "/metrics shows the job running ($2)" 60 metrics_running
  curl -sf "http://$addr/" | grep -i "<html" >/dev/null || fail "dashboard index ($2)"
  curl -sf "http://$addr/static/vendor/uplot/LICENSE" | grep "MIT" >/dev/null || fail "uPlot licence ($2)"
  "$bin/colo" sim --json | grep '"completed":90' >/dev/null || fail "colo sim on the packaged data ($2)"
  "$bin/colo" --socket "$state/colo.sock" cancel "$id" >/dev/null
  kill "${pids[-1]}"
  wait "${pids[-1]}" || true
  unset 'pids[-1]'
}

# The maintainer scripts manage colod's unit (and are valid shell).
for script in postinst prerm postrm; do
  text=$(dpkg-deb -I "$deb" "$script") || fail "the package has no $script"
  sh -n <<<"$text" || fail "$script is not valid shell"
done
dpkg-deb -I "$deb" postinst | grep -q "deb-systemd-helper enable colod.service" || fail "postinst does not enable colod"
dpkg-deb -x "$deb" "$tmp/unpacked"
# The unpacked binaries must use the unpacked files (share/colo beside bin/), not this tree's.
out=$("$tmp/unpacked/usr/bin/colo" sim --report /nonexistent-dir/r.html 2>&1 || true)
grep -q "directory '/nonexistent-dir'" <<<"$out" || fail "the unpacked colo does not find its report assets: $out"
"$tmp/unpacked/usr/bin/colo" sim --policy magm --report "$tmp/r.html" >/dev/null 2>&1 || fail "colo sim --report (unpacked)"
grep -q "uPlot" "$tmp/r.html" || fail "the report has no chart code"
run_from "$tmp/unpacked" unpacked

# "Installed" is dpkg's "install ok installed": a package removed before (state rc, config files
# left) does not count.
if [ "${CI:-}" = "true" ] && [ "$(id -u)" -eq 0 ] &&
   [ "$(dpkg-query -W -f='${Status}' colo 2>/dev/null || true)" != "install ok installed" ]; then
  dpkg -i "$deb" >/dev/null || { apt-get install -y -f -qq >/dev/null; dpkg -i "$deb" >/dev/null; }
  run_from "" installed
  # The units as installed (hardening directives included) must be valid to systemd.
  if command -v systemd-analyze >/dev/null; then
    units=(/lib/systemd/system/colod.service /lib/systemd/system/colo-slurm-recover.service
           /lib/systemd/system/colo-slurm-node-weight.service)
    verify=$(systemd-analyze verify "${units[@]}" 2>&1) || fail "systemd-analyze verify: $verify"
    [ -z "$verify" ] || fail "systemd-analyze verify: $verify"
  fi
  dpkg -r colo >/dev/null
  echo "deb_test: installed with dpkg -i, ran /usr/bin/colod, removed"
else
  echo "deb_test: dpkg -i skipped (runs only with CI=true as root and no colo package installed)"
fi
echo "deb_test: OK"
