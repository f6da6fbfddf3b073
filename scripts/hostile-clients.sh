#!/usr/bin/env bash
# Measures how colod's API holds up against hostile local clients.
#
# Starts build/colod on fake GPUs, submits enough (rejected, 3-GPU) jobs with long names to
# make `GET /v1/jobs?all=1` far larger than a socket buffer, then keeps N hostile connections
# open for the whole measurement (a connection the server closes is reopened):
#   40 %  send `GET /v1/jobs?all=1` and never read the answer,
#   30 %  send half a request and go silent,
#   30 %  send a request one byte every --slow-interval seconds.
# Meanwhile it runs `colo gpus` --requests times (one after the other) and reports p50/p99/max
# latency, and submits a probe job to check that scheduling continues (it must reach running
# or done). The last line is a one-line summary.
# Run as root, the hostile clients are another user (nobody), the usual threat on a shared
# server; --same-uid makes them the measuring user (then they also compete with it for that
# user's connection cap and handler turns).
#
#   scripts/hostile-clients.sh [--build DIR] [--hostile N] [--requests N] [--jobs N]
#                              [--max-seconds S] [--slow-interval S] [--same-uid]
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build"
hostile=100
requests=200
jobs=1000
max_seconds=240
slow_interval=0.5
same_uid=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --hostile) hostile="$2"; shift 2 ;;
    --requests) requests="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --max-seconds) max_seconds="$2"; shift 2 ;;
    --slow-interval) slow_interval="$2"; shift 2 ;;
    --same-uid) same_uid=1; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "hostile-clients: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
build="$(cd "$build" && pwd)"
for b in colod colo; do
  [[ -x "$build/$b" ]] || { echo "hostile-clients: $build/$b not built" >&2; exit 2; }
done

state="$(mktemp -d /tmp/colo-hostile-XXXXXX)"
chmod 755 "$state"  # the hostile user must reach the socket
colod_pid=""
cleanup() {
  # A colod that died under attack is the finding: show why before its state goes.
  if [[ -n "$colod_pid" ]] && ! kill -0 "$colod_pid" 2>/dev/null; then
    echo "hostile-clients: colod exited; the end of its log:" >&2
    tail -n 40 "$state/colod.log" >&2 || true
  fi
  if [[ -n "$colod_pid" ]]; then
    kill "$colod_pid" 2>/dev/null || true
    wait "$colod_pid" 2>/dev/null || true
  fi
  rm -rf "$state"
}
trap cleanup EXIT

"$build/colod" --fake-gpus 2x40GiB --state-dir "$state" >"$state/colod.log" 2>&1 &
colod_pid=$!
sock="$state/colo.sock"
for _ in $(seq 1 300); do
  "$build/colo" --socket "$sock" gpus >/dev/null 2>&1 && break
  kill -0 "$colod_pid" 2>/dev/null || { cat "$state/colod.log" >&2; exit 1; }
  sleep 0.1
done

python3 - "$build/colo" "$sock" "$hostile" "$requests" "$jobs" "$max_seconds" "$slow_interval" "$colod_pid" "$same_uid" <<'PY'
import json, os, select, signal, socket, subprocess, sys, threading, time

colo, sock_path = sys.argv[1], sys.argv[2]
n_hostile, n_requests, n_jobs = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
max_seconds, slow_interval, colod_pid = float(sys.argv[6]), float(sys.argv[7]), int(sys.argv[8])
attack_uid = 65534 if os.geteuid() == 0 and sys.argv[9] == "0" else None

def http(method, target, body=None, timeout=120):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(sock_path)
    data = body.encode() if body is not None else b""
    s.sendall(f"{method} {target} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)
    out = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        out += chunk
    s.close()
    head, _, payload = out.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), payload

def as_attacker():
    if attack_uid is not None:
        os.setgroups([])
        os.setgid(attack_uid)
        os.setuid(attack_uid)

# 1. Make the hostile user's /v1/jobs?all=1 large: jobs asking for 3 GPUs on a 2-GPU server are
#    rejected (failed) at once, so they neither run nor block the queue. Done as that user (in a
#    child process), since a user lists only their own jobs.
def fill():
    t0 = time.monotonic()
    for i in range(n_jobs):
        status, _ = http("POST", "/v1/jobs", json.dumps({"argv": ["/bin/true"], "gpus": 3, "name": f"filler-{i:05d}-" + "n" * 180}))
        assert status == 201, status
    fill_s = time.monotonic() - t0
    for _ in range(100):  # until colod has rejected them all (the list carries the reasons)
        status, payload = http("GET", "/v1/jobs")
        if json.loads(payload) == []:
            break
        time.sleep(0.1)
    status, payload = http("GET", "/v1/jobs?all=1")
    return {"fill_s": fill_s, "list_bytes": len(payload)}

rfd, wfd = os.pipe()
child = os.fork()
if child == 0:
    os.close(rfd)
    as_attacker()
    os.write(wfd, json.dumps(fill()).encode())
    os._exit(0)
os.close(wfd)
filled = json.loads(os.read(rfd, 4096))
os.waitpid(child, 0)
os.close(rfd)
fill_s, list_bytes = filled["fill_s"], filled["list_bytes"]

def colo_gpus():
    t = time.monotonic()
    try:
        r = subprocess.run([colo, "--socket", sock_path, "gpus"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=70)
        ok = r.returncode == 0
    except subprocess.TimeoutExpired:
        ok = False
    return ok, time.monotonic() - t

baseline = sorted(colo_gpus()[1] for _ in range(20))

# 2. The attack.
HOG = b"GET /v1/jobs?all=1 HTTP/1.1\r\nHost: x\r\n\r\n"
HALF = b"GET /v1/gpus HTTP/1.1\r\nHo"
SLOW = b"GET /v1/gpus HTTP/1.1\r\nHost: x\r\n\r\n"
kinds = ["hog"] * (n_hostile * 4 // 10) + ["half"] * (n_hostile * 3 // 10)
kinds += ["slow"] * (n_hostile - len(kinds))
stop = threading.Event()
stats = {"opened": 0, "closed_by_server": 0, "connect_failed": 0}

class Conn:
    def __init__(self, kind):
        self.kind, self.sent, self.s = kind, 0, None
        self.open()
    def open(self):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.setblocking(False)
        try:
            self.s.connect(sock_path)
        except (BlockingIOError, ConnectionRefusedError, OSError):
            stats["connect_failed"] += 1
        stats["opened"] += 1
        self.sent = 0
        try:
            if self.kind == "hog":
                self.s.send(HOG)
            elif self.kind == "half":
                self.s.send(HALF)
        except OSError:
            pass
        self.next_byte = time.monotonic()
    def reopen(self):
        stats["closed_by_server"] += 1
        self.s.close()
        self.open()

def attack():
    conns = [Conn(k) for k in kinds]
    while not stop.is_set():
        p = select.poll()
        for i, c in enumerate(conns):
            p.register(c.s.fileno(), select.POLLHUP)  # POLLHUP/POLLERR are always reported
        by_fd = {c.s.fileno(): c for c in conns}
        for fd, ev in p.poll(50):
            if ev & (select.POLLHUP | select.POLLERR):
                by_fd[fd].reopen()
        now = time.monotonic()
        for c in conns:
            if c.kind == "slow" and now >= c.next_byte:
                if c.sent < len(SLOW):
                    try:
                        c.s.send(SLOW[c.sent:c.sent + 1])
                        c.sent += 1
                    except OSError:
                        c.reopen()
                        continue
                else:  # answered: read it and start over
                    try:
                        if c.s.recv(65536) == b"":
                            c.reopen()
                    except BlockingIOError:
                        pass
                    except OSError:
                        c.reopen()
                c.next_byte = now + slow_interval
    for c in conns:
        c.s.close()

# The attack runs in a child process (as another user when we are root); it reports its
# counters through a pipe when told to stop.
rfd, wfd = os.pipe()
attacker = os.fork()
if attacker == 0:
    os.close(rfd)
    as_attacker()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        attack()
    finally:
        os.write(wfd, json.dumps(stats).encode())
        os._exit(0)
os.close(wfd)
time.sleep(1.0)  # let the hostile connections settle in (their requests reach colod)

probe = {"id": None, "state": None, "after_s": None}
def probe_job():
    t = time.monotonic()
    r = subprocess.run([colo, "--socket", sock_path, "submit", "--mem", "1GiB", "--", "/bin/sleep", "0.5"],
                       capture_output=True, text=True, timeout=70)
    if r.returncode != 0:
        probe["state"] = "submit failed: " + r.stderr.strip()
        return
    probe["id"] = int(r.stdout.strip())
    while time.monotonic() - t < max_seconds and not stop.is_set():
        r = subprocess.run([colo, "--socket", sock_path, "show", str(probe["id"]), "--json"],
                           capture_output=True, text=True, timeout=70)
        if r.returncode == 0:
            probe["state"] = json.loads(r.stdout)["state"]
            if probe["state"] in ("running", "done"):
                probe["after_s"] = time.monotonic() - t
                return
        time.sleep(0.1)
prober = threading.Thread(target=probe_job, daemon=True)
prober.start()

lat, failed = [], 0
start = time.monotonic()
for i in range(n_requests):
    if time.monotonic() - start > max_seconds:
        break
    ok, dt = colo_gpus()
    if ok:
        lat.append(dt)
    else:
        failed += 1
attack_s = time.monotonic() - start
prober.join(timeout=max(0.0, max_seconds - attack_s) + 5)
stop.set()
os.kill(attacker, signal.SIGTERM)
stats = json.loads(os.read(rfd, 4096) or b"{}") or stats
os.waitpid(attacker, 0)
alive = True
try:
    os.kill(colod_pid, 0)
except OSError:
    alive = False

def pct(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]
ms = lambda x: f"{x * 1000:.1f} ms"
load = open("/proc/loadavg").read().split()[0]
n_hog, n_half, n_slow = kinds.count("hog"), kinds.count("half"), kinds.count("slow")
print(f"filled {n_jobs} jobs in {fill_s:.1f} s; GET /v1/jobs?all=1 = {list_bytes} bytes")
print(f"baseline (no attack, 20 x colo gpus): p50 {ms(pct(baseline, .5))}, max {ms(baseline[-1])}")
who = f"uid {attack_uid}" if attack_uid is not None else "the measuring uid"
print(f"attack (as {who}): {stats.get('opened')} hostile connections opened, "
      f"{stats.get('closed_by_server')} closed by colod and reopened")
probe_txt = (f"probe job {probe['state']} after {probe['after_s']:.1f} s" if probe["after_s"] is not None
             else f"probe job NOT running/done (last state {probe['state']})")
print(f"hostile-clients: {n_hostile} hostile as {who} ({n_hog} non-reading, {n_half} half-request, {n_slow} byte-at-a-time); "
      f"colo gpus x{len(lat) + failed}/{n_requests} in {attack_s:.1f} s: ok {len(lat)}, failed {failed}; "
      f"p50 {ms(pct(lat, .5))}, p99 {ms(pct(lat, .99))}, max {ms(max(lat) if lat else float('nan'))}; "
      f"{probe_txt}; colod {'alive' if alive else 'DEAD'}; load {load}")
sys.exit(0 if alive and failed == 0 and probe["after_s"] is not None else 1)
PY
