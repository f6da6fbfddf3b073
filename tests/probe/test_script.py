"""--script: a user's unmodified training script probed as it stands. Each test writes a script the
way users write them and runs `python3 -m colo_probe --script` in a process of its own (argv
handling, the stop after two steps, the exit status and the one-line errors): run_probe forks it
from a process that has imported torch already (forked_probe.py; COLO_PROBE_TESTS_FRESH=1: a
fresh interpreter each time), the tests that start `python3 -m colo_probe` themselves use a fresh
interpreter."""
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

import torch
import torch.nn as nn
import forked_probe
from probe_util import Trace

PYTHON_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "python")
_DIRS = []


def tearDownModule():
    for d in _DIRS:
        shutil.rmtree(d, ignore_errors=True)


def _read(path):
    with open(path) as f:
        return f.read()


def run_probe(script_text, script_args=(), probe_args=(), name="train.py", env=None):
    """(exit status, trace text or None, stderr, the script's directory)."""
    d = tempfile.mkdtemp(prefix="colo-script-")
    _DIRS.append(d)
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(textwrap.dedent(script_text))
    out = os.path.join(d, "out.trace")
    env = dict(env or os.environ, PYTHONPATH=os.path.abspath(PYTHON_DIR), CUDA_VISIBLE_DEVICES="")
    p = forked_probe.run(["--out", out, *probe_args, "--script", path, *script_args], env=env, cwd=d, timeout=600)
    text = _read(out) if os.path.exists(out) and p.returncode == 0 else None
    return p.returncode, text, p.stderr, d


def footer(text):
    return json.loads([line for line in text.splitlines() if line.startswith("E ")][0][2:])


def header(text):
    return json.loads([line for line in text.splitlines() if line.startswith("H ")][0][2:])


RESNET_SCRIPT = """
    import argparse
    import torch, torch.nn as nn, torchvision
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch-size", type=int, default=8)
    args = ap.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torchvision.models.resnet18(num_classes=10).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    crit = nn.CrossEntropyLoss()
    step = 0
    while True:  # never ends by itself: the probe stops it
        x = torch.randn(args.batch_size, 3, 64, 64).to(device, non_blocking=True)
        y = torch.randint(0, 10, (args.batch_size,)).to(device)
        opt.zero_grad(set_to_none=True)
        out = model(x)
        loss = crit(out, y)
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.3f} acc {(out.argmax(1) == y).float().mean().item():.2f}")
        step += 1
"""


class Script(unittest.TestCase):
    def test_the_probe_leaves_no_temporary_files(self):
        # PyTorch's import makes a temporary directory only its finalizer removes, and script mode
        # ends with os._exit: each probe left one in TMPDIR (so colod's probes, one per submitted job).
        tmp = tempfile.mkdtemp(prefix="colo-tmpdir-")
        _DIRS.append(tmp)
        script = "import tempfile\nopen(tempfile.mkstemp(suffix='.cache')[1], 'w').write('x')\n" + textwrap.dedent(RESNET_SCRIPT)
        env = dict(os.environ, TMPDIR=tmp)
        rc, text, err, _ = run_probe(script, ["--batch-size", "2"], env=env)
        self.assertEqual(rc, 0, err)
        self.assertEqual(os.listdir(tmp), [])
        # And the model form (a normal exit): a file whose build fails, the probe's failure path too.
        d = tempfile.mkdtemp(prefix="colo-model-")
        _DIRS.append(d)
        with open(os.path.join(d, "m.py"), "w") as f:
            f.write("import torch\ndef build():\n    return torch.nn.Linear(4, 2)\ndef broken():\n    raise ValueError('no')\n")
        for fn, want in (("build", 0), ("broken", 1)):
            p = subprocess.run([sys.executable, "-m", "colo_probe", "--model", os.path.join(d, "m.py") + ":" + fn,
                                "--input", "4", "--batch", "2", "--out", os.path.join(d, "out.trace")],
                               capture_output=True, text=True, env=dict(env, PYTHONPATH=os.path.abspath(PYTHON_DIR),
                                                                        CUDA_VISIBLE_DEVICES=""), timeout=600)
            self.assertEqual(p.returncode, want, p.stderr)
            self.assertEqual(os.listdir(tmp), [], fn)

    def test_a_killed_probes_directory_is_removed_by_the_next_probe_and_a_running_ones_is_not(self):
        # colod kills a probe past its deadline with SIGKILL: no handler runs, its TMPDIR stays.
        import fcntl
        import signal
        tmp = tempfile.mkdtemp(prefix="colo-tmpdir-")
        _DIRS.append(tmp)
        d = tempfile.mkdtemp(prefix="colo-model-")
        _DIRS.append(d)
        with open(os.path.join(d, "m.py"), "w") as f:
            f.write("import sys, torch\n"
                    "def stuck():\n"
                    "    sys.stderr.write('colo-test-ready\\n')\n"
                    "    sys.stderr.flush()\n"
                    "    sys.stdin.read()  # until killed: nothing is ever written\n"
                    "def build():\n"
                    "    return torch.nn.Linear(4, 2)\n")
        env = dict(os.environ, TMPDIR=tmp, PYTHONPATH=os.path.abspath(PYTHON_DIR), CUDA_VISIBLE_DEVICES="")

        def probe(fn):
            return [sys.executable, "-m", "colo_probe", "--model", os.path.join(d, "m.py") + ":" + fn,
                    "--input", "4", "--batch", "2", "--out", os.path.join(d, fn + ".trace")]

        p = subprocess.Popen(probe("stuck"), stdin=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                             start_new_session=True)
        try:
            # The model is being built (its TMPDIR exists) once it says so; EOF: the probe ended.
            seen = []
            for line in iter(p.stderr.readline, b""):
                seen.append(line)
                if line == b"colo-test-ready\n":
                    break
            else:
                self.fail(b"".join(seen).decode())
        finally:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            p.stdin.close()
            p.stderr.close()
        killed = [n for n in os.listdir(tmp) if n.startswith("colo-probe-")]
        self.assertEqual(len(killed), 1, os.listdir(tmp))
        # What the next probe must leave alone: a running probe's directory (its lock held, here
        # by this process), one that is not a probe's (no lock file), a link, and their targets.
        live = os.path.join(tmp, "colo-probe-running")
        os.mkdir(live)
        held = os.open(os.path.join(live, ".lock"), os.O_WRONLY | os.O_CREAT, 0o600)
        fcntl.flock(held, fcntl.LOCK_EX)
        os.mkdir(os.path.join(tmp, "colo-probe-nolock"))
        target = tempfile.mkdtemp(prefix="colo-target-", dir=d)
        open(os.path.join(target, ".lock"), "w").close()
        os.symlink(target, os.path.join(tmp, "colo-probe-link"))
        try:
            r = subprocess.run(probe("build"), capture_output=True, text=True, env=env, timeout=600)
        finally:
            os.close(held)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(os.listdir(tmp)), ["colo-probe-link", "colo-probe-nolock", "colo-probe-running"])
        self.assertEqual(os.listdir(target), [".lock"])

    def test_an_endless_loop_is_stopped_after_two_steps_and_matches_the_model_probe(self):
        rc, text, err, _ = run_probe(RESNET_SCRIPT, ["--batch-size", "16"])
        self.assertEqual(rc, 0, err)
        self.assertEqual([line for line in text.splitlines() if line.startswith("S ")], ["S 1", "S 2"])
        self.assertEqual(header(text)["args"], ["--batch-size", "16"])
        self.assertEqual(header(text)["optimizer"], "adam")
        self.assertIn("step 0 loss", err, "the script's own prints go to stderr, not into the trace")
        self.assertNotIn("step 1 loss", err, "the run stops inside the second optimizer step")
        # The same network, batch and optimizer through --model: the same storages at the peak.
        with tempfile.NamedTemporaryFile("r", suffix=".trace") as f:
            env = dict(os.environ, PYTHONPATH=os.path.abspath(PYTHON_DIR))
            subprocess.run([sys.executable, "-m", "colo_probe", "--model", "torchvision:resnet18", "--num-classes", "10",
                            "--input", "3x64x64", "--batch", "16", "--optimizer", "adam", "--out", f.name],
                           check=True, env=env, timeout=600)
            model_peak = footer(f.read())["peak_live_bytes"]
        script_peak = footer(text)["peak_live_bytes"]
        self.assertLess(abs(script_peak - model_peak), 0.01 * model_peak, (script_peak, model_peak))
        t = Trace(text)
        self.assertTrue(t.by_op("to_cuda"), "the script's model.to(device) and batches are recorded")

    def test_an_optimizer_built_before_model_cuda_still_gets_its_state_on_the_gpu(self):
        body = """
            import torch, torch.nn as nn
            model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
            {before}
            model.cuda()
            {after}
            for i in range(5):
                x = torch.randn(8, 1024).cuda(); y = torch.randint(0, 10, (8,)).cuda()
                opt.zero_grad(); loss = nn.functional.cross_entropy(model(x), y)
                if torch.isfinite(loss):  # a value the probe cannot know: checks pass
                    loss.backward()
                opt.step()
        """
        make = "opt = torch.optim.Adam(model.parameters())"
        rc1, first, err1, _ = run_probe(body.format(before=make, after=""))
        rc2, usual, err2, _ = run_probe(body.format(before="", after=make))
        self.assertEqual((rc1, rc2), (0, 0), err1 + err2)
        # PyTorch keeps the Parameter objects across .cuda(): Adam's state lands on the GPU either way.
        self.assertEqual(footer(first)["peak_live_bytes"], footer(usual)["peak_live_bytes"])
        self.assertTrue(Trace(usual).by_op("zeros_like") or "optimizer" in usual)
        self.assertGreater(footer(usual)["value_reads"], 0)

    def test_gpu_ordinals_the_target_lacks_and_model_parallelism_are_refused(self):
        two_gpus = """
            import torch, torch.nn as nn
            a = nn.Linear(64, 64).to("cuda:0"); b = nn.Linear(64, 64).to("cuda:1")
            opt = torch.optim.SGD(list(a.parameters()) + list(b.parameters()), lr=0.1)
            for _ in range(3):
                b(a(torch.randn(4, 64).cuda()).to("cuda:1")).sum().backward(); opt.step()
        """
        rc, _, err, _ = run_probe(two_gpus)
        self.assertNotEqual(rc, 0)
        self.assertIn("invalid device ordinal (cuda:1; the target has 1 GPU(s)", err)
        rc, _, err, _ = run_probe(two_gpus, probe_args=["--gpus", "2"])
        self.assertNotEqual(rc, 0)
        self.assertIn("placing tensors on cuda:1 (model parallelism over GPUs) is not supported", err)
        rc, _, err, _ = run_probe("""
            import torch, torch.nn as nn
            m = nn.DataParallel(nn.Linear(64, 10).cuda(), device_ids=[0, 1, 2, 3])
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            for _ in range(3):
                m(torch.randn(8, 64).cuda()).sum().backward(); opt.step()
        """)
        self.assertNotEqual(rc, 0)
        self.assertIn("DataParallel device_ids [0, 1, 2, 3]: the target has GPUs 0..0", err)
        # An ordinal the target has is the GPU: tensor.to(0), as scripts write .to(local_rank).
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            m = nn.Linear(64, 10).to(0)
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            for _ in range(3):
                x = torch.randn(4, 64).to(0); y = torch.randint(0, 10, (4,)).to(0)
                nn.functional.cross_entropy(m(x), y).backward(); opt.step()
        """)
        self.assertEqual(rc, 0, err)
        self.assertTrue(Trace(text).by_op("to_cuda"))

    def test_an_argparse_refusal_says_which_argument(self):
        rc, _, err, _ = run_probe(RESNET_SCRIPT, ["--batch-size", "many"])
        self.assertNotEqual(rc, 0)
        self.assertIn("the script exited (status 2) before building an optimizer", err)
        self.assertIn("argument --batch-size: invalid int value: 'many'", err.splitlines()[-1])

    def test_an_unwritable_out_is_refused_before_the_script_runs(self):
        d = tempfile.mkdtemp(prefix="colo-script-")
        _DIRS.append(d)
        path = os.path.join(d, "t.py")
        with open(path, "w") as f:
            f.write("open('ran', 'w').close()\n")
        env = dict(os.environ, PYTHONPATH=os.path.abspath(PYTHON_DIR))
        for out in ("/nonexistent/x.trace", d):
            p = subprocess.run([sys.executable, "-m", "colo_probe", "--out", out, "--script", path],
                               capture_output=True, text=True, env=env, cwd=d, timeout=120)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "ran")))

    def test_the_script_sees_the_target_gpu(self):
        rc, text, err, d = run_probe("""
            import json, sys, torch
            x = torch.zeros(4, device="cuda")
            m = torch.nn.Linear(4, 4).cuda()
            seen = {"available": torch.cuda.is_available(), "count": torch.cuda.device_count(),
                    "name": torch.cuda.get_device_name(0),
                    "total": torch.cuda.get_device_properties(0).total_memory,
                    "is_cuda": x.is_cuda, "device": str(m.weight.device), "bf16": torch.cuda.is_bf16_supported(),
                    "is_meta": x.is_meta or m.weight.is_meta,  # the probe holds them on meta; a GPU's are not
                    "allocated": torch.cuda.memory_allocated(), "argv": sys.argv[1:],
                    # PyTorch 2's Adam step asks this; a real CUDA call would fail (or wake a GPU)
                    "capturing": torch.cuda.is_current_stream_capturing()}
            json.dump(seen, open("seen.json", "w"))
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            for _ in range(5):
                m(x).sum().backward(); opt.step(); opt.zero_grad()
        """, ["--flag", "value"], ["--gpus", "2", "--gpu-name", "NVIDIA H100 80GB HBM3", "--gpu-memory-mib", "81559"])
        self.assertEqual(rc, 0, err)
        seen = json.loads(_read(os.path.join(d, "seen.json")))
        self.assertEqual(seen, {"available": True, "count": 2, "name": "NVIDIA H100 80GB HBM3", "total": 81559 << 20,
                                "is_cuda": True, "is_meta": False, "device": "cuda:0", "bf16": True,
                                "argv": ["--flag", "value"],
                                "allocated": 16 + 64 + 16, "capturing": False})

    def test_amp_scaler_clipping_scheduler_and_a_pinned_loader(self):
        script = """
            import sys, torch, torch.nn as nn
            from torch.utils.data import DataLoader, TensorDataset
            amp = sys.argv[1]
            model = nn.Sequential(nn.Linear(256, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 10)).cuda()
            opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            sched = torch.optim.lr_scheduler.StepLR(opt, 10)
            scaler = torch.cuda.amp.GradScaler(enabled=(amp == "fp16"))
            loader = DataLoader(TensorDataset(torch.randn(2048, 256), torch.randint(0, 10, (2048,))),
                                batch_size=512, shuffle=True, pin_memory=True)
            for epoch in range(10):
                for x, y in loader:
                    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
                    with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=(amp != "none")):
                        loss = nn.functional.cross_entropy(model(x), y)
                    scaler.scale(loss).backward()
                    scaler.unscale_(opt)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    scaler.step(opt)
                    scaler.update()
                    sched.step()
                    opt.zero_grad()
        """
        peaks = {}
        for amp in ("none", "fp16"):
            rc, text, err, _ = run_probe(script, [amp])
            self.assertEqual(rc, 0, err)
            peaks[amp] = footer(text)["peak_live_bytes"]
            if amp == "fp16":
                t = Trace(text)
                self.assertTrue([a for _, a in t.allocs.items() if a[2] == "_to_copy" and a[0] == 2048 * 2048 * 2],
                                "autocast casts the weights to fp16")
        self.assertNotEqual(peaks["none"], peaks["fp16"])

    def test_data_parallel_over_the_target_gpus_gathers_on_gpu0(self):
        script = """
            import torch, torch.nn as nn
            model = nn.DataParallel(nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 10))).cuda()
            opt = torch.optim.Adam(model.parameters())
            for _ in range(3):
                x = torch.randn(64, 128).cuda()
                model(x).sum().backward()
                opt.step()
                opt.zero_grad()
        """
        rc, text, err, _ = run_probe(script, probe_args=["--gpus", "2"])
        self.assertEqual(rc, 0, err)
        gathered = Trace(text).by_op("gather")
        self.assertTrue(gathered, "DataParallel's outputs are gathered on GPU 0")
        self.assertEqual(gathered[0][1][0], 64 * 10 * 4, "the whole batch's output")
        rc, text, err, _ = run_probe(script)
        self.assertEqual(rc, 0, err)
        self.assertFalse(Trace(text).by_op("gather"), "one GPU: DataParallel just calls the module")

    def test_what_the_script_keeps_between_steps_is_in_the_trace(self):
        script = """
            import sys, torch, torch.nn as nn
            keep = sys.argv[1] == "keep"
            model = nn.Linear(1024, 65536).cuda()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            kept = []
            for _ in range(4):
                out = model(torch.randn(64, 1024, device="cuda"))
                out.float().mean().backward()
                opt.step()
                opt.zero_grad()
                if keep:
                    kept.append(out.detach())  # e.g. logits kept for an epoch-end metric
                del out
        """
        peaks = {}
        for mode in ("keep", "drop"):
            rc, text, err, _ = run_probe(script, [mode])
            self.assertEqual(rc, 0, err)
            peaks[mode] = footer(text)["peak_live_bytes"]
        self.assertGreaterEqual(peaks["keep"] - peaks["drop"], 64 * 65536 * 4, peaks)

    def test_side_streams_empty_cache_and_memory_fraction_reach_the_trace(self):
        # A prefetcher (the next batch copied on a side stream, as timm's and NVIDIA's loaders do),
        # empty_cache() between steps and a memory fraction: the caching allocator keeps the side
        # stream's blocks apart, releases its cache, caps what it reserves; the replay needs all three.
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            torch.cuda.set_per_process_memory_fraction(0.5)
            model = nn.Linear(256, 256).cuda()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            side = torch.cuda.Stream()
            assert torch.cuda.current_stream() == torch.cuda.default_stream()
            def load():
                with torch.cuda.stream(side):
                    assert torch.cuda.current_stream() == side
                    return torch.randn(32, 256).cuda(non_blocking=True)
            nxt = load()
            while True:
                torch.cuda.current_stream().wait_stream(side)
                nxt.record_stream(torch.cuda.current_stream())
                x, nxt = nxt, load()
                model(x).sum().backward()
                opt.step()
                opt.zero_grad()
                torch.cuda.empty_cache()
        """)
        self.assertEqual(rc, 0, err)
        lines = text.splitlines()
        self.assertEqual(lines[0], "colo-probe-trace 2")
        self.assertEqual(header(text)["trace_version"], 2)
        self.assertIn("L 0.5", lines)
        self.assertTrue(any(line.startswith("X ") for line in lines), text[:2000])
        streams = {line.split()[3] for line in lines if line.startswith("M ")}
        self.assertEqual(streams, {"0", "1"}, "the batches on the side stream, the rest on the default one")
        # PyTorch's own argument checks.
        rc, text, err, _ = run_probe("""
            import torch
            torch.cuda.set_per_process_memory_fraction(1.5)
        """)
        self.assertNotEqual(rc, 0)
        self.assertIn("Invalid fraction value: 1.5", err)
        rc, text, err, _ = run_probe("""
            import torch
            torch.cuda.set_per_process_memory_fraction(float("nan"))
        """)
        self.assertNotEqual(rc, 0)
        self.assertIn("Invalid fraction value: nan", err)

    def test_a_float_subclass_fraction_is_written_as_a_plain_number(self):
        # numpy.float64 is a float whose repr (numpy >= 2) is "np.float64(0.5)": the trace must
        # hold the number the C++ reader parses.
        from colo_probe.trace import TraceWriter

        class F(float):
            def __repr__(self):
                return f"np.float64({float(self)})"

        w = TraceWriter("-")
        w.memory_fraction(F(0.5))
        self.assertEqual(w.lines[-1], "L 0.5")

    def test_allocator_settings_the_script_gives_before_using_the_gpu_are_recorded(self):
        loop = ("m = torch.nn.Linear(8, 2).cuda()\no = torch.optim.SGD(m.parameters(), lr=0.1)\n"
                "for _ in range(3):\n    m(torch.randn(4, 8, device='cuda')).sum().backward(); o.step(); o.zero_grad()\n")
        saved = {k: os.environ.pop(k, None) for k in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")}
        try:
            rc, trace, err, _ = run_probe("import os\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'max_split_size_mb:64'\n"
                                          "import torch\n" + loop)
            self.assertEqual(rc, 0, err)
            self.assertEqual(header(trace)["alloc_conf"], "max_split_size_mb:64")
            rc, trace, err, _ = run_probe("import torch\n"
                                          "torch.cuda.memory._set_allocator_settings('expandable_segments:True')\n" + loop)
            self.assertEqual(rc, 0, err)
            self.assertEqual(header(trace)["alloc_conf"], "expandable_segments:True")
            # Changed after the GPU was used: refused, not followed silently.
            rc, trace, err, _ = run_probe("import torch\nx = torch.zeros(4, device='cuda')\n"
                                          "torch.cuda.memory._set_allocator_settings('expandable_segments:True')\n" + loop)
            self.assertEqual(rc, 1, err)
            self.assertIn("_set_allocator_settings after the GPU was first used", err.strip().splitlines()[-1])
        finally:
            for k, v in saved.items():
                if v is not None:
                    os.environ[k] = v

    def test_two_optimizers_each_step_twice(self):
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            g, d = nn.Linear(16, 16).cuda(), nn.Linear(16, 1).cuda()
            og, od = torch.optim.Adam(g.parameters()), torch.optim.Adam(d.parameters())
            while True:
                z = torch.randn(8, 16, device="cuda")
                d(g(z).detach()).mean().backward(); od.step(); od.zero_grad()
                d(g(z)).mean().backward(); og.step(); og.zero_grad()
        """)
        self.assertEqual(rc, 0, err)
        self.assertEqual([line for line in text.splitlines() if line.startswith("S ")], ["S 1", "S 2"])

    def test_autocast_with_gradient_checkpointing_recomputes_under_autocast(self):
        # The usual fp16 + checkpointing setup, both checkpoint variants: the recompute in backward
        # must see the forward's autocast, as torch.utils.checkpoint restores it on a GPU.
        for reentrant in ("True", "False"):
            rc, trace, err, _ = run_probe(f"""
                import torch, torch.nn as nn
                from torch.utils.checkpoint import checkpoint
                stem = nn.Linear(256, 256).cuda()
                blocks = nn.ModuleList([nn.Sequential(nn.Linear(256, 256), nn.GELU()) for _ in range(4)]).cuda()
                opt = torch.optim.AdamW(list(stem.parameters()) + list(blocks.parameters()))
                scaler = torch.cuda.amp.GradScaler()
                while True:
                    x = torch.randn(32, 256, device="cuda")
                    with torch.autocast("cuda", dtype=torch.float16):
                        x = stem(x)
                        for b in blocks:
                            x = checkpoint(b, x, use_reentrant={reentrant})
                        loss = x.float().pow(2).mean()
                    opt.zero_grad()
                    scaler.scale(loss).backward()
                    scaler.step(opt)
                    scaler.update()
                """)
            self.assertEqual(rc, 0, err)
            t = Trace(trace)
            recomputed = [a for _, a in t.by_op("addmm") if a[1] == "backward" and a[3] == 2]
            self.assertTrue(recomputed and all(a[0] == 32 * 256 * 2 for a in recomputed), (reentrant, recomputed))

    def test_a_checkpoint_saved_within_the_first_steps_is_skipped_and_counted(self):
        rc, trace, err, d = run_probe("""
            import torch
            m = torch.nn.Linear(4, 4).cuda()
            o = torch.optim.SGD(m.parameters(), lr=1)
            torch.save({"model": m.state_dict()}, "initial.pt")
            while True:
                m(torch.zeros(2, 4, device="cuda")).sum().backward()
                o.step()
                torch.save(m.state_dict(), "last.pt")
            """)
        self.assertEqual(rc, 0, err)
        self.assertEqual(footer(trace)["saves_skipped"], 2)  # the initial one and the one after step 1
        self.assertFalse(os.path.exists(os.path.join(d, "initial.pt")))

    def test_failures_are_one_line_and_name_the_cause(self):
        cases = [
            ("import torch\nm = torch.nn.Linear(4, 4).cuda()\no = torch.optim.SGD(m.parameters(), lr=1)\n"
             "m(torch.zeros(2, 4, device='cuda')).sum().backward()\no.step()\n",
             "the script finished after 1 optimizer step"),
            ("import torch\n\ndef build():\n    raise KeyError('lr')\n\nbuild()\n",
             "the script raised KeyError: 'lr' (train.py:4) before building an optimizer"),
            ("import sys\nsys.exit(3)\n", "the script exited (status 3)"),
            ("import sys\nsys.exit('bye')\n", "the script exited (status 1: bye)"),
            ("try:\n    import torch\n    m = torch.nn.Linear(4, 4).cuda()\n    o = torch.optim.SGD(m.parameters(), lr=1)\n"
             "    while True:\n        m(torch.zeros(2, 4, device='cuda')).sum().backward(); o.step()\n"
             "except Exception:\n    pass\n", None),  # a script's `except Exception` cannot swallow the stop
        ]
        for text, message in cases:
            rc, trace, err, _ = run_probe(text)
            if message is None:
                self.assertEqual(rc, 0, err)
                continue
            self.assertEqual(rc, 1, err)
            last = err.strip().splitlines()[-1]
            self.assertTrue(last.startswith("colo_probe: error: "), last)
            self.assertIn(message, last)
        p = subprocess.run([sys.executable, "-m", "colo_probe", "--script", "/nonexistent/train.py"], capture_output=True,
                           text=True, env=dict(os.environ, PYTHONPATH=os.path.abspath(PYTHON_DIR)), timeout=300)
        self.assertEqual(p.returncode, 2)
        self.assertIn("no such file", p.stderr)


if __name__ == "__main__":
    unittest.main()


class HostValues(unittest.TestCase):
    """Small probe tensors made from host data keep their values, and so does what is computed from
    them alone (tensor.py, "Values"): a script that sizes its model from its labels, or divides by a
    count it synchronised, reads what the GPU would give it."""

    def test_a_model_sized_from_its_labels_is_recorded_at_that_size(self):
        # GAT's `labels.max().item() + 1` classes: before, the assumed 0 gave a one-class classifier.
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            labels = torch.randint(0, 1000, (4096,))
            labels[17] = 999
            labels = labels.cuda()
            classes = labels.max().item() + 1
            assert classes == 1000 and int((labels >= 0).sum()) == 4096, classes
            model = nn.Linear(64, classes).cuda()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            while True:
                nn.functional.cross_entropy(model(torch.randn(4096, 64, device="cuda")), labels).backward()
                opt.step(); opt.zero_grad()
        """)
        self.assertEqual(rc, 0, err)
        self.assertTrue(any(a[0] == 64 * 1000 * 4 for a in Trace(text).allocs.values()))  # the weight
        self.assertEqual(footer(text)["value_reads"], 0)  # nothing was assumed

    def test_new_tensor_on_the_gpu_keeps_its_data(self):
        # x.new_tensor(data) of a GPU tensor, or with device="cuda": before, its values were lost
        # (every read gave the assumed 0) and it was not recorded as made from host data.
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            model = nn.Linear(8, 4).cuda()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            x = torch.randn(2, 8, device="cuda")
            while True:
                counts = x.new_tensor([37, 3])               # x's dtype and device
                assert counts.dtype == torch.float32 and counts.tolist() == [37.0, 3.0], counts.tolist()
                sizes = torch.zeros(1).new_tensor(torch.tensor([5, 6]), dtype=torch.int64, device="cuda")
                assert sizes.is_cuda and sizes.max().item() == 6, sizes.tolist()
                model(x[:, :int(counts.min())].repeat(1, 3)[:, :8]).sum().backward()
                opt.step()
        """)
        self.assertEqual(rc, 0, err)
        made = sorted(a[0] for a in Trace(text).allocs.values() if a[2] == "new_tensor")
        self.assertEqual(made, [8, 8, 16, 16])  # two steps of 2 float32 and 2 int64
        self.assertEqual(footer(text)["value_reads"], 0)

    def test_values_follow_factories_views_and_in_place_operators(self):
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            t = torch.tensor([2.0, 6.0], device="cuda")
            assert t.tolist() == [2.0, 6.0] and f"{t.sum():.1f}" == "8.0"
            b = torch.ones(4, device="cuda")
            v = b[:2]
            b.add_(1)
            assert v.tolist() == [2.0, 2.0], v.tolist()  # a view sees its base's in-place update
            small = nn.Linear(4, 4).cuda()  # small weights keep the values they were initialised with
            expect = nn.functional.linear(torch.full((4,), 2.0), small.weight.cpu(), small.bias.cpu())
            assert small(b).tolist() == expect.tolist()
            model = nn.Linear(4, 1 << 15).cuda()  # too large to keep values
            b.copy_(model(b)[:4].detach())
            assert v.tolist() == [0.0, 0.0], v.tolist()  # unknown now: assumed, not the stale 2s
            big = torch.ones(1 << 17, device="cuda")  # too large to keep values
            assert big.sum().item() == 0
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            while True:
                model(torch.randn(2, 4, device="cuda")).sum().backward(); opt.step()
        """)
        self.assertEqual(rc, 0, err)
        self.assertGreater(footer(text)["value_reads"], 0)  # the unknown ones were counted

    def test_a_metric_synchronised_across_processes_keeps_its_ratio(self):
        # torchvision's reference SmoothedValue: all_reduce of [count, total] (as rank 0 of 2, every
        # rank alike), then total / count. Before, the assumed zeros divided by zero.
        rc, text, err, _ = run_probe("""
            import torch, torch.distributed as dist
            dist.init_process_group("nccl")
            t = torch.tensor([4, 10.0], dtype=torch.float64, device="cuda")
            dist.all_reduce(t)
            count, total = t.tolist()
            assert (count, total) == (8, 20.0) and total / count == 2.5, (count, total)
            m = torch.tensor([3.0], device="cuda")
            dist.all_reduce(m, op=dist.ReduceOp.MAX)
            assert m.item() == 3.0
            g = [torch.zeros(2, device="cuda") for _ in range(2)]
            dist.all_gather(g, torch.tensor([1.0, 2.0], device="cuda"))
            assert [x.tolist() for x in g] == [[1.0, 2.0], [1.0, 2.0]]
            out = torch.ones(4, device="cuda")
            dist.all_gather_into_tensor(out, torch.ones(2, device="cuda"))
            assert out.tolist() == [0.0] * 4  # what other ranks sent is unknown: assumed
            model = torch.nn.Linear(4, 4).cuda()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            while True:
                model(torch.randn(2, 4, device="cuda")).sum().backward(); opt.step()
        """, probe_args=["--torchrun", "2"])
        self.assertEqual(rc, 0, err)


class ScriptsAsWrittenToday(unittest.TestCase):
    """Idioms of current training scripts (PyTorch's own examples, its AMP recipe) that a probe
    answering only torch.cuda got silently wrong: each ran, and recorded the wrong thing."""

    AMP = """
        import torch, torch.nn as nn
        model = nn.Sequential(nn.Linear(512, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 10)).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        while True:
            x = torch.randn(256, 512, device="cuda"); y = torch.randint(0, 10, (256,), device="cuda")
            with {ctx}:
                loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
    """

    def test_set_default_device_puts_the_model_and_batches_on_the_gpu(self):
        # PyTorch 2's torch.set_default_device("cuda"): no .cuda() or device= anywhere (provided on
        # 1.13 too). Before, 1.13 raised AttributeError; on 2.x its device mode sat under the probe's.
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            torch.set_default_device("cuda")
            assert torch.get_default_device().type == "cuda"
            model = nn.Sequential(nn.Linear(1024, 2048), nn.ReLU(), nn.Linear(2048, 10))
            opt = torch.optim.Adam(model.parameters())
            while True:
                x, y = torch.randn(64, 1024), torch.randint(0, 10, (64,))
                nn.functional.cross_entropy(model(x), y).backward()
                opt.step(); opt.zero_grad()
        """)
        self.assertEqual(rc, 0, err)
        t = Trace(text)
        self.assertTrue(any(a[0] == 1024 * 2048 * 4 and a[1] == "load" for a in t.allocs.values()))  # the weight
        self.assertTrue(any(a[0] == 64 * 1024 * 4 for a in t.allocs.values()))  # the batch
        self.assertGreaterEqual(len([a for a in t.allocs.values() if a[0] == 1024 * 2048 * 4]), 4)  # + grad, Adam's two

    def test_metrics_in_inference_mode_view_the_training_tensors(self):
        # torchvision's reference train.py: its accuracy runs under torch.inference_mode() and takes
        # views (target[None], topk's indices transposed) of tensors made before it. Before, every
        # such view raised "Cannot set version_counter for inference tensor".
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            model = nn.Linear(64, 10).cuda()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            while True:
                x, target = torch.randn(32, 64).cuda(), torch.randint(0, 10, (32,)).cuda()
                out = model(x)
                loss = nn.functional.cross_entropy(out, target)
                opt.zero_grad(); loss.backward(); opt.step()
                with torch.inference_mode():
                    _, pred = out.topk(5, 1, True, True)
                    correct = pred.t().eq(target[None])
                    acc = correct[:1].flatten().sum(dtype=torch.float32) * (100.0 / 32)
                    assert not torch.is_inference(target[None])
        """)
        self.assertEqual(rc, 0, err)

    def test_moving_a_module_already_on_the_gpu_again_keeps_it(self):
        # Module.to(device) on a GPU module (an EMA copy made with AveragedModel(model, device=...),
        # as torchvision's reference script does): each tensor gets .to(device, None, non_blocking).
        # Before, the probe passed (None, False) on as a dtype and raised TypeError.
        rc, text, err, _ = run_probe("""
            import copy, torch, torch.nn as nn
            model = nn.Sequential(nn.Linear(256, 256), nn.BatchNorm1d(256)).to("cuda")
            model = model.to(torch.device("cuda"))
            ema = torch.optim.swa_utils.AveragedModel(model, device=torch.device("cuda"))
            half = copy.deepcopy(model).to("cuda", torch.float16)
            assert half[0].weight.dtype == torch.float16 and half[1].num_batches_tracked.dtype == torch.int64
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            while True:
                model(torch.randn(8, 256, device="cuda")).sum().backward()
                opt.step(); opt.zero_grad()
                ema.update_parameters(model)
        """)
        self.assertEqual(rc, 0, err)
        weights = [a for a in Trace(text).allocs.values() if a[0] == 256 * 256 * 4 and a[1] == "load"]
        # the model's, the EMA's deep copy and the one converted to half: moving again copies nothing
        self.assertEqual(len(weights), 3)

    def test_float32_autocast_changes_nothing(self):
        # llm.c wraps its forward in autocast(dtype=ptdtype) whatever --dtype says: float32 casts
        # nothing on CUDA. Before, every dtype but bfloat16 was recorded as float16 autocast.
        script = """
            import sys, contextlib, torch, torch.nn as nn
            model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024)).cuda()
            opt = torch.optim.AdamW(model.parameters())
            ctx = {"fp32": torch.amp.autocast(device_type="cuda", dtype=torch.float32),
                   "cuda-fp32": torch.cuda.amp.autocast(dtype=torch.float32),
                   "none": contextlib.nullcontext()}[sys.argv[1]]
            while True:
                with ctx:
                    loss = model(torch.randn(64, 1024, device="cuda")).square().mean()
                loss.backward(); opt.step(); opt.zero_grad()
        """
        peaks = {}
        for how in ("fp32", "cuda-fp32", "none"):
            rc, text, err, _ = run_probe(script, [how])
            self.assertEqual(rc, 0, err)
            peaks[how] = footer(text)["peak_live_bytes"]
            self.assertFalse([a for a in Trace(text).allocs.values() if a[2] == "_to_copy"], how)  # no casts
        self.assertEqual(peaks["fp32"], peaks["none"])
        self.assertEqual(peaks["cuda-fp32"], peaks["none"])
        rc, _, err, _ = run_probe("""
            import torch
            with torch.autocast("cuda", dtype=torch.float64):
                pass
        """)
        self.assertEqual(rc, 1)
        self.assertIn("autocast to torch.float64 on CUDA is not supported by the probe", err)

    def test_pytorch_2_spellings_on_the_way_to_training(self):
        # llm.c's train_gpt2.py: the inductor's settings and nn.init's generator= (PyTorch 2.1),
        # provided on 1.13 too; and Tensor.type() of a GPU tensor as a CUDA build names it.
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            import torch._inductor.config as config
            config.coordinate_descent_tuning = True
            model = nn.Linear(256, 256).cuda()
            g = torch.Generator(device="cuda")
            torch.nn.init.normal_(model.weight, mean=0.0, std=0.02, generator=g)
            torch.nn.init.uniform_(model.bias, generator=g)
            w = model.weight
            assert w.type() == "torch.cuda.FloatTensor" and torch.typename(w) == "torch.cuda.FloatTensor", w.type()
            assert w.type(torch.float16).dtype == torch.float16 and w.type("torch.cuda.HalfTensor").is_cuda
            assert torch.ones(2, dtype=torch.long, device="cuda").type() == "torch.cuda.LongTensor"
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            while True:
                model(torch.randn(8, 256, device="cuda")).sum().backward(); opt.step()
        """)
        self.assertEqual(rc, 0, err)

    def test_a_parameter_group_added_later_steps_as_the_others(self):
        # llm.c adds its no-decay group with add_param_group: PyTorch 2 picks the multi-tensor
        # (foreach) step for it at step time, as for the groups given at construction.
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            a, b = nn.Linear(512, 512).cuda(), nn.Linear(512, 512).cuda()
            opt = torch.optim.AdamW(a.parameters())
            opt.add_param_group({"params": list(b.parameters()), "weight_decay": 0.0})
            assert opt.param_groups[1]["foreach"] is True
            while True:
                (a(torch.randn(8, 512, device="cuda")) + b(torch.randn(8, 512, device="cuda"))).sum().backward()
                opt.step(); opt.zero_grad()
        """)
        self.assertEqual(rc, 0, err)
        ops = {a[2] for a in Trace(text).allocs.values() if a[1] == "optimizer"}
        self.assertFalse({"sqrt", "div", "mul"} & ops, ops)  # no single-tensor temporaries

    def test_timms_prefetcher_names_its_stream_by_keyword(self):
        # timm's PrefetchLoader: partial(torch.cuda.stream, stream=s), PyTorch's parameter name.
        # Before, every timm run with its default prefetcher raised TypeError at the first batch.
        rc, text, err, _ = run_probe("""
            import functools, torch, torch.nn as nn
            model = nn.Linear(256, 256).cuda()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            side = torch.cuda.Stream()
            stream_context = functools.partial(torch.cuda.stream, stream=side)
            while True:
                with stream_context():
                    x = torch.randn(32, 256).cuda(non_blocking=True)
                torch.cuda.current_stream().wait_stream(side)
                model(x).sum().backward(); opt.step(); opt.zero_grad()
        """)
        self.assertEqual(rc, 0, err)
        moved = [line.split() for line in text.splitlines() if line.startswith("M ") and line.endswith(" to_cuda")]
        self.assertEqual({f[3] for f in moved if int(f[2]) == 32 * 256 * 4}, {"1"})  # batches: the side stream

    def test_the_elements_of_an_iterated_tensor_keep_their_values(self):
        # timm's NaFlex grid sizes: [int(h.item()) for h, w in zip(max_y, max_x)]. Iterating is
        # unbind, whose list elements PyTorch 1.13's schema gives no alias set: before, they lost
        # their storage and read the assumed 0 (F.interpolate to size 0 then failed).
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            c = torch.tensor([3, 5]).cuda()
            assert [c[i].item() for i in range(2)] == [3, 5]
            assert [t.item() for t in c.unbind(0)] == [3, 5] and [t.item() for t in c] == [3, 5]
            assert [t.tolist() for t in c.split(1)] == [[3], [5]] and [t.tolist() for t in c.chunk(2)] == [[3], [5]]
            sizes = [int(h.item()) for h, w in zip(c, c)]
            grid = nn.functional.interpolate(torch.randn(1, 8, 16, 16, device="cuda"), size=sizes)
            assert tuple(grid.shape) == (1, 8, 3, 5)
            model = nn.Linear(8, 8).cuda()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            while True:
                model(torch.randn(4, 8, device="cuda")).sum().backward(); opt.step()
        """)
        self.assertEqual(rc, 0, err)

    def test_profiling_and_device_queries_answer_as_on_the_gpu(self):
        # NVTX ranges, a CUDA generator, the memory-history recorder, utilization and the build's
        # architectures: a CPU build of PyTorch raises on each, a CUDA build on the target does not.
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            g = torch.Generator(device="cuda")
            g.manual_seed(0)
            assert isinstance(g, torch.Generator) and isinstance(torch.default_generator, torch.Generator)
            torch.cuda.memory._record_memory_history(max_entries=1000)
            assert torch.cuda.get_arch_list() == ["sm_80"] and torch.cuda.utilization() == 0
            model = nn.Linear(256, 256).cuda()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            while True:
                torch.cuda.nvtx.range_push("step")
                with torch.cuda.nvtx.range("forward"):
                    loss = model(torch.randn(32, 256, device="cuda", generator=g)).sum()
                loss.backward(); opt.step()
                torch.cuda.nvtx.range_pop()
                torch.cuda.memory._dump_snapshot("snapshot.pickle")
        """)
        self.assertEqual(rc, 0, err)
        self.assertTrue(any(a[0] == 32 * 256 * 4 for a in Trace(text).allocs.values()))

    def test_fused_optimizers_keep_their_state_and_no_temporaries(self):
        # fused=True (PyTorch 2's single-kernel step): 1.13 refused it for AdamW and SGD, and its
        # fused Adam kernel is CUDA-only (a 2 000-character NotImplementedError).
        script = """
            import sys, torch, torch.nn as nn
            m = nn.Linear(1024, 1024, bias=False).cuda()
            kind = sys.argv[1]
            opt = {"adamw": lambda: torch.optim.AdamW(m.parameters(), lr=1e-3, fused=True),
                   "adam": lambda: torch.optim.Adam(m.parameters(), lr=1e-3, fused=True, amsgrad=True),
                   "sgd": lambda: torch.optim.SGD(m.parameters(), lr=1e-3, momentum=0.9, fused=True),
                   "adamw-foreach": lambda: torch.optim.AdamW(m.parameters(), lr=1e-3)}[kind]()
            while True:
                m(torch.randn(8, 1024, device="cuda")).sum().backward()
                opt.step(); opt.zero_grad()
        """
        weight = 1024 * 1024 * 4
        state = {}
        for kind in ("adamw", "adam", "sgd", "adamw-foreach"):
            rc, text, err, _ = run_probe(script, [kind])
            self.assertEqual(rc, 0, f"{kind}: {err}")
            opt_allocs = [a for a in Trace(text).allocs.values() if a[1] == "optimizer" and a[0] == weight]
            state[kind] = len(opt_allocs)
        self.assertEqual(state["adamw"], 2)   # exp_avg, exp_avg_sq, nothing per step
        self.assertEqual(state["adam"], 3)    # and max_exp_avg_sq (amsgrad)
        self.assertEqual(state["sgd"], 1)     # the momentum buffer
        self.assertGreater(state["adamw-foreach"], 2)  # foreach: the state and a temporary list per step

    LBFGS = """
        import sys, torch, torch.nn as nn
        torch.manual_seed(0)
        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = nn.Linear(256, 256, bias=False).to(device)
        search = None if sys.argv[1] == "none" else sys.argv[1]
        opt = torch.optim.LBFGS(model.parameters(), lr=0.5, history_size=5, max_iter=4, line_search_fn=search)
        x = torch.randn(512, 256, device=device); y = torch.randn(512, 256, device=device)
        evals = 0
        def closure():
            global evals
            evals += 1
            with open("evals", "w") as f:
                f.write(str(evals))
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            return loss
        for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 10**9):
            opt.step(closure)
        state = opt.state[next(model.parameters())]
        flat = [t for k, v in state.items() for t in (v if isinstance(v, list) else [v])
                if isinstance(t, torch.Tensor) and t.numel() == 256 * 256]
        print(len(flat), len(state["old_dirs"]))
    """

    def test_lbfgs_steps_its_longest_path_with_a_full_history(self):
        # LBFGS's step length follows values: on the probe's assumed ones PyTorch's step returned
        # after one closure with no history, though a training job holds history_size pairs of flat
        # vectors. The real run on the CPU (a regression that does not converge in 12 steps) fills
        # its history; the probe's trace must hold as many parameter-sized tensors at its end.
        d = tempfile.mkdtemp(prefix="colo-lbfgs-")
        _DIRS.append(d)
        with open(os.path.join(d, "train.py"), "w") as f:
            f.write(textwrap.dedent(self.LBFGS))
        real = subprocess.run([sys.executable, "train.py", "none", "12"], cwd=d, capture_output=True, text=True,
                              timeout=600, env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
        self.assertEqual(real.returncode, 0, real.stderr)
        flat, pairs = map(int, real.stdout.split())
        self.assertEqual((flat, pairs), (2 * 5 + 2, 5))  # old_dirs, old_stps, prev_flat_grad, d
        weight = 256 * 256 * 4
        for search, evals in (("none", 2 * 4), ("strong_wolfe", 2 * (1 + 1 + 25))):
            rc, text, err, sd = run_probe(self.LBFGS, [search])
            self.assertEqual(rc, 0, f"{search}: {err}")
            trace = Trace(text)
            state = [a for a in trace.live_at_end().values() if a[0] == weight and a[1] == "optimizer"]
            self.assertEqual(len(state), flat, search)
            # per step: max_iter closures; or the first, the line search's first trial and its max_ls=25
            # further trials (max_eval is tested only after the line search)
            self.assertEqual(int(_read(os.path.join(sd, "evals"))), evals, search)
            if search == "strong_wolfe":
                # the line search's copy of the parameters and its four gradients live over a closure
                self.assertGreaterEqual(trace.live_peak(), (flat + 1 + 1 + 4) * weight)

    def test_tensors_resized_in_place_take_their_new_size(self):
        # resize_, resize_as_, an out= argument of another size and set_ change a GPU tensor's
        # shape, and a storage that must grow is reallocated (the larger block, then the old one
        # freed). Before, the tensor kept its old shape under the probe and the larger storage was
        # never recorded: Rprop's step size (`grad.new().resize_as_(grad)` on 1.13) was 0 bytes.
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            buf = torch.empty(0, device="cuda")
            buf.resize_(1000, 1000)
            assert buf.shape == (1000, 1000), buf.shape
            out = torch.empty(0, device="cuda")
            torch.cat([torch.ones(500, 100, device="cuda"), torch.ones(500, 100, device="cuda")], out=out)
            assert out.shape == (1000, 100), out.shape
            a = torch.ones(100, 100, device="cuda")
            b = torch.empty(0, device="cuda")
            b.set_(a)
            view = b[:10]
            b.resize_(200, 100)  # grows the storage a, b and the view share
            assert (a.shape, b.shape, view.shape) == ((100, 100), (200, 100), (10, 100))
            del buf, out
            model = nn.Linear(256, 256, bias=False).cuda()
            opt = torch.optim.Rprop(model.parameters(), lr=0.01)
            while True:
                model(torch.randn(64, 256, device="cuda")).square().mean().backward()
                opt.step()
                opt.zero_grad()
        """)
        self.assertEqual(rc, 0, err)
        trace = Trace(text)
        sizes = {a[2]: a[0] for a in trace.allocs.values() if a[1] == "load" and a[2] in ("resize_", "cat")}
        self.assertEqual(sizes, {"resize_": 200 * 100 * 4, "cat": 1000 * 100 * 4})
        grown = [i for i, a in trace.allocs.items() if a[2] == "resize_"]
        self.assertEqual([trace.allocs[i][0] for i in grown], [1000 * 1000 * 4, 200 * 100 * 4])
        self.assertIn(grown[0], trace.frees)  # `del buf`: the grown block is the one freed
        # a's 40 000-byte block gave way to the 80 000-byte one, which stays
        ones = [i for i, a in trace.allocs.items() if a[2] == "ones" and a[0] == 100 * 100 * 4]
        self.assertIn(ones[0], trace.frees)
        self.assertNotIn(grown[1], trace.frees)
        # Rprop's state: prev and the step sizes, both like the weight (PyTorch 2 makes the step
        # sizes with full_like, 1.13 with new().resize_as_())
        weight = 256 * 256 * 4
        state = [a for a in trace.live_at_end().values() if a[0] == weight and a[1] == "optimizer"]
        self.assertEqual(len(state), 2)

    def test_zero_grad_sets_gradients_to_none_by_default_as_in_pytorch2(self):
        # PyTorch 1.13's zero_grad() kept the gradients allocated (zeroed) into the next forward;
        # PyTorch 2's, the target's (a GPU job never runs Debian's CPU-only 1.13), frees them and the
        # backward makes them again. set_to_none=False, asked for, keeps them on every version.
        script = """
            import sys, torch, torch.nn as nn
            m = nn.Linear(1024, 1024, bias=False).cuda()
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            while True:
                if sys.argv[1] == "default":
                    opt.zero_grad()
                else:
                    m.zero_grad(set_to_none=False)
                m(torch.randn(8, 1024, device="cuda")).sum().backward()
                opt.step()
        """
        weight = 1024 * 1024 * 4
        for how in ("default", "keep"):
            rc, text, err, _ = run_probe(script, [how])
            self.assertEqual(rc, 0, f"{how}: {err}")
            trace = Trace(text)
            # each backward makes the weight's gradient; the second is added into a kept first one
            made = [i for i, a in trace.allocs.items() if a[0] == weight and a[1] == "backward"]
            self.assertEqual(len(made), 2, how)
            if how == "default":  # the first step's gradient freed before the second is made
                self.assertLess(trace.order.index(("F", made[0])), trace.order.index(("M", made[1])))
            else:
                self.assertNotIn(made[0], trace.frees)

    def test_ema_lerp_and_sdpa_backend_choice_as_in_pytorch2(self):
        # torch._foreach_lerp_ (EMA) and torch.nn.attention.sdpa_kernel exist under the probe on 1.13
        # too; forcing the math backend records the [batch, heads, seq, seq] scores, a fused one not.
        script = """
            import sys, torch, torch.nn as nn, torch.nn.functional as F
            from torch.nn.attention import sdpa_kernel, SDPBackend
            backend = SDPBackend.MATH if sys.argv[1] == "math" else SDPBackend.FLASH_ATTENTION
            proj = nn.Linear(64, 64).cuda()
            ema = [p.detach().clone() for p in proj.parameters()]
            opt = torch.optim.SGD(proj.parameters(), lr=0.1)
            while True:
                x = proj(torch.randn(4, 8, 256, 64, device="cuda"))
                with sdpa_kernel([backend]):
                    out = F.scaled_dot_product_attention(x, x, x, is_causal=True)
                with torch.backends.cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=sys.argv[1] != "math",
                                                    enable_math=True):
                    out = out + F.scaled_dot_product_attention(x, x, x)
                out.sum().backward(); opt.step(); opt.zero_grad()
                torch._foreach_lerp_(ema, list(proj.parameters()), 0.001)
        """
        scores = 4 * 8 * 256 * 256 * 4
        counts = {}
        for backend in ("math", "flash"):
            rc, text, err, _ = run_probe(script, [backend])
            self.assertEqual(rc, 0, f"{backend}: {err}")
            counts[backend] = len([a for a in Trace(text).allocs.values() if a[0] == scores])
        self.assertGreater(counts["math"], 0)
        self.assertEqual(counts["flash"], 0)

    def test_torch_amp_autocast_is_recorded_in_half_precision_like_torch_autocast(self):
        peaks = {}
        for name, ctx in (("amp", 'torch.amp.autocast("cuda", dtype=torch.bfloat16)'),
                          ("autocast", 'torch.autocast("cuda", dtype=torch.bfloat16)'),
                          ("fp32", 'torch.autocast("cuda", enabled=False)')):
            rc, text, err, _ = run_probe(self.AMP.format(ctx=ctx))
            self.assertEqual(rc, 0, err)
            peaks[name] = footer(text)["peak_live_bytes"]
            casts = [a for a in Trace(text).allocs.values() if a[2] == "_to_copy" and a[0] == 4096 * 4096 * 2]
            self.assertEqual(bool(casts), name != "fp32", f"{name}: the 4096 x 4096 weight cast to bfloat16")
        # torch.amp.autocast is PyTorch 2's recommended spelling (torch.cuda.amp.autocast is deprecated);
        # it used to run as the CPU build's autocast, which turns itself off for "cuda": fp32 recorded.
        self.assertEqual(peaks["amp"], peaks["autocast"])
        self.assertNotEqual(peaks["amp"], peaks["fp32"])

    def test_the_device_generic_accelerator_api_answers_as_the_target(self):
        # As pytorch/examples' imagenet/main.py chooses its device (PyTorch 2.6+), with PyTorch 2's
        # GradScaler and compile; on a PyTorch without them (1.13) the probe provides them.
        rc, text, err, d = run_probe("""
            import json, torch, torch.accelerator
            import torchvision
            use_accel = torch.accelerator.is_available()
            device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")
            torch.accelerator.set_device_index(1)
            try:
                torch.accelerator.set_device_index(2)
                refused = False
            except RuntimeError:
                refused = True
            model = torch.compile(torchvision.models.resnet18(num_classes=10).to(device))  # 2.0+: eager here
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            scaler = torch.amp.GradScaler("cuda")  # 2.3+
            seen = {"available": use_accel, "type": device.type, "count": torch.accelerator.device_count(),
                    "index": torch.accelerator.current_device_index(), "refused": refused}
            with torch.accelerator.device_index(0):
                torch.accelerator.synchronize()
            for i in range(5):
                x = torch.randn(16, 3, 64, 64).to(device); y = torch.randint(0, 10, (16,)).to(device)
                with torch.amp.autocast(device.type, dtype=torch.float16):
                    loss = torch.nn.functional.cross_entropy(model(x), y)
                opt.zero_grad(); scaler.scale(loss).backward(); scaler.step(opt); scaler.update()
                seen["allocated"] = torch.accelerator.memory.memory_allocated()
                seen["peak"] = torch.accelerator.memory.max_memory_allocated()
                seen["free"], seen["total"] = torch.accelerator.memory.get_memory_info()
                seen["stats"] = torch.cuda.memory_stats()["allocated_bytes.all.peak"]
                json.dump(seen, open("seen.json", "w"))
        """, probe_args=["--gpus", "2", "--gpu-memory-mib", "81559"])
        self.assertEqual(rc, 0, err)
        seen = json.loads(_read(os.path.join(d, "seen.json")))
        self.assertEqual({k: seen[k] for k in ("available", "type", "count", "index", "refused", "total")},
                         {"available": True, "type": "cuda", "count": 2, "index": 0, "refused": True,
                          "total": 81559 << 20})
        self.assertGreater(seen["allocated"], 11_000_000 * 4, "ResNet-18's weights are on the GPU")
        self.assertEqual(seen["stats"], seen["peak"])
        self.assertEqual(seen["free"], (81559 << 20) - seen["allocated"])
        self.assertEqual([line for line in text.splitlines() if line.startswith("S ")], ["S 1", "S 2"])

    def test_a_script_that_trains_on_the_cpu_is_refused_not_estimated_as_empty(self):
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            model = nn.Linear(64, 10)  # never moved: the script trains on the CPU
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for _ in range(5):
                loss = model(torch.randn(8, 64)).sum(); opt.zero_grad(); loss.backward(); opt.step()
        """)
        self.assertNotEqual(rc, 0)
        self.assertIsNone(text)
        self.assertIn("without putting anything on the GPU", err.strip().splitlines()[-1])

    def test_hand_written_updates_stop_after_two_iterations(self):
        # pytorch/examples' word_language_model updates its weights by hand; no optimizer to count.
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            model = nn.LSTM(256, 512, 2).cuda()
            head = nn.Linear(512, 100).cuda()
            for it in range(50):
                x = torch.randn(20, 32, 256, device="cuda")
                out, _ = model(x)
                loss = nn.functional.cross_entropy(head(out).view(-1, 100), torch.zeros(640, dtype=torch.long, device="cuda"))
                model.zero_grad(); head.zero_grad()
                loss.backward()
                for p in list(model.parameters()) + list(head.parameters()):
                    p.data.add_(p.grad, alpha=-0.1)
                print(f"iteration {it} loss {loss:.3f}")
        """)
        self.assertEqual(rc, 0, err)
        self.assertEqual([line for line in text.splitlines() if line.startswith("S ")], ["S 1", "S 2"])
        self.assertIn("iteration 1 loss 0.000", err, "f-string formatting of a GPU scalar reads an assumed value")
        self.assertNotIn("iteration 2 ", err, "stopped as the third backward pass began")
        t = Trace(text)
        self.assertTrue([a for a in t.allocs.values() if a[1] == "backward" and a[3] == 2], "both backward passes are in")
        self.assertGreater(footer(text)["value_reads"], 0)

    def test_host_copies_convert_and_attention_backward_runs_off_the_main_thread(self):
        # torchvision.utils.save_image does .to("cpu", torch.uint8); the fused attention's backward
        # runs on the autograd engine's device thread (nn.TransformerEncoder with a causal mask).
        rc, text, err, d = run_probe("""
            import torch, torch.nn as nn
            layer = nn.TransformerEncoderLayer(128, 4, 256, dropout=0.1)
            model = nn.TransformerEncoder(layer, 2).cuda()
            mask = torch.log(torch.tril(torch.ones(32, 32))).to(next(model.parameters()).device)
            opt = torch.optim.Adam(model.parameters())
            for _ in range(5):
                x = torch.randn(32, 8, 128, device="cuda")
                out = model(x, mask=mask)
                host = out.detach().to("cpu", torch.uint8)
                assert host.dtype == torch.uint8 and host.device.type == "cpu", (host.dtype, host.device)
                loss = out.float().pow(2).mean()
                opt.zero_grad(); loss.backward(); opt.step()
        """)
        self.assertEqual(rc, 0, err)
        self.assertTrue(Trace(text).by_op("empty_like"), "the attention backward's scratch is recorded")

    def test_autocast_as_a_decorator_is_the_same_region_as_a_with_block(self):
        body = """
            import torch, torch.nn as nn
            class M(nn.Module):
                def __init__(self):
                    super().__init__(); self.l = nn.Linear(1024, 4096); self.o = nn.Linear(4096, 10)
                {deco}
                def forward(self, x):
                    {with_}
                        return self.o(torch.relu(self.l(x)))
            model = M().cuda()
            opt = torch.optim.Adam(model.parameters())
            for i in range(5):
                x = torch.randn(512, 1024, device="cuda"); y = torch.randint(0, 10, (512,), device="cuda")
                loss = nn.functional.cross_entropy(model(x).float(), y)
                opt.zero_grad(); loss.backward(); opt.step()
        """
        ctx = 'torch.autocast("cuda", dtype=torch.bfloat16)'
        texts = {}
        for name, deco, with_ in (("with", "", f"with {ctx}:"), ("decorator", "@" + ctx, "if True:"),
                                  ("cuda.amp", "@torch.cuda.amp.autocast(dtype=torch.bfloat16)", "if True:"),
                                  ("disabled", '@torch.autocast("cuda", enabled=False)', "if True:")):
            rc, text, err, _ = run_probe(body.format(deco=deco, with_=with_))
            self.assertEqual(rc, 0, f"{name}: {err}")
            texts[name] = text
        peak = {k: footer(t)["peak_live_bytes"] for k, t in texts.items()}
        self.assertEqual(peak["decorator"], peak["with"])
        self.assertEqual(peak["cuda.amp"], peak["with"])
        self.assertNotEqual(peak["disabled"], peak["with"])
        self.assertTrue([a for a in Trace(texts["decorator"]).allocs.values() if a[0] == 4096 * 1024 * 2],
                        "the weight cast to bfloat16")

    def test_an_ema_copy_of_the_model_stays_on_the_gpu(self):
        rc, text, err, _ = run_probe("""
            import copy, torch, torch.nn as nn
            model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)).cuda()
            ema = torch.optim.swa_utils.AveragedModel(model)
            shadow = copy.deepcopy(model)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for i in range(5):
                x = torch.randn(8, 1024, device="cuda"); y = torch.randint(0, 10, (8,), device="cuda")
                loss = nn.functional.cross_entropy(model(x), y)
                opt.zero_grad(); loss.backward(); opt.step(); ema.update_parameters(model)
                with torch.no_grad():
                    for s, p in zip(shadow.parameters(), model.parameters()):
                        s.mul_(0.99).add_(p, alpha=0.01)
        """)
        self.assertEqual(rc, 0, err)
        t = Trace(text)
        weights = (1024 * 1024 + 1024 + 10 * 1024 + 10) * 4
        copies = [i for i, a in t.allocs.items() if a[1] == "load" and a[2] == "clone"]
        self.assertEqual(sum(t.allocs[i][0] for i in copies), 2 * weights, "AveragedModel's and deepcopy's weights")
        self.assertFalse([i for i in copies if i in t.frees], "the copies live as long as the script keeps them")

    def test_half_after_cuda_converts_the_weights_in_place_of_the_old_ones(self):
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)).cuda().half()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for i in range(5):
                x = torch.randn(8, 1024, device="cuda").half(); y = torch.randint(0, 10, (8,), device="cuda")
                loss = nn.functional.cross_entropy(model(x), y)
                opt.zero_grad(); loss.backward(); opt.step()
        """)
        self.assertEqual(rc, 0, err)
        t = Trace(text)
        fp32 = [i for i, a in t.allocs.items() if a[2] == "to_cuda" and a[0] == 1024 * 1024 * 4]
        fp16 = [i for i, a in t.allocs.items() if a[1] == "load" and a[2] == "_to_copy" and a[0] == 1024 * 1024 * 2]
        self.assertEqual((len(fp32), len(fp16)), (1, 1))
        self.assertEqual(t.frees.get(fp32[0], (None,))[0], "load", "the float32 weight is freed by .half()")
        self.assertNotIn(fp16[0], t.frees)

    def test_lightning_module_idioms_on_pytorch_1_13(self):
        # What PyTorch Lightning's LightningModule does on PyTorch < 2.1: it imports the sharded-tensor
        # state-dict hooks (before: "mutable default ... TensorProperties" on Python 3.11, so no
        # Lightning script ran) and counts parameters, leaving out UninitializedParameter ones (1.13
        # took every probe parameter for one: "0 params", and lazy-module checks misfired).
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            from torch.distributed._shard.sharded_tensor import pre_load_state_dict_hook, state_dict_hook
            from torch.nn.parameter import UninitializedParameter
            model = nn.Linear(1024, 1024).cuda()
            model._register_state_dict_hook(state_dict_hook)
            assert isinstance(model.weight, nn.Parameter)
            lazy = [n for n, p in model.named_parameters() if isinstance(p, UninitializedParameter)]
            assert not lazy, lazy
            assert sum(p.numel() for p in model.parameters()) == 1024 * 1024 + 1024
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            while True:
                model(torch.randn(8, 1024, device="cuda")).sum().backward()
                opt.step()
        """)
        self.assertEqual(rc, 0, err)
        self.assertTrue(any(a[0] == 1024 * 1024 * 4 and a[1] == "load" for a in Trace(text).allocs.values()))

    def test_cuda_visible_devices_lists_the_jobs_gpus_for_the_script_only(self):
        # colod and Slurm set CUDA_VISIBLE_DEVICES to the job's GPUs, and scripts count their GPUs by
        # it (Lightning on PyTorch < 2 too). Before, the script read the probe's own empty value and
        # found no GPU. The process environment, which CUDA's driver reads, stays empty.
        rc, text, err, _ = run_probe("""
            import ctypes, os
            import torch, torch.nn as nn
            visible = os.environ["CUDA_VISIBLE_DEVICES"].split(",")
            assert visible == ["0", "1", "2"], visible
            assert os.getenv("CUDA_VISIBLE_DEVICES") == "0,1,2"
            libc = ctypes.CDLL(None)
            libc.getenv.restype = ctypes.c_char_p
            assert libc.getenv(b"CUDA_VISIBLE_DEVICES") == b"", libc.getenv(b"CUDA_VISIBLE_DEVICES")
            model = nn.DataParallel(nn.Linear(64, 64).cuda(), device_ids=list(range(len(visible))))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            while True:
                model(torch.randn(12, 64, device="cuda")).sum().backward()
                opt.step()
        """, probe_args=["--gpus", "3"])
        self.assertEqual(rc, 0, err)
        self.assertIn(" forward gather", text)  # DataParallel's outputs gathered on GPU 0

    def test_ctc_loss_with_its_lengths_on_the_host_or_the_gpu(self):
        # Speech and OCR models (DeepSpeech, CRNN) train with nn.CTCLoss, usually with host length
        # tensors. Before, those failed the step ("found at least two devices, meta and cpu").
        # log_alpha is [batch, T, 2 x longest target + 1]: its size follows the lengths' values.
        # The backward kernel holds log_beta, like log_alpha, while it makes the gradient, and a
        # problem it calls large (2 T + 24 B / 10 + 2 C / 10 > 450: T = 240 here, not T = 100) two
        # [B, T, longest + 1] temporaries besides; before, none of them was recorded.
        script = """
            import sys, torch, torch.nn as nn
            T = int(sys.argv[1])
            head = nn.Linear(40, 30).cuda()
            opt = torch.optim.Adam(head.parameters())
            ctc = nn.CTCLoss()
            x = torch.randn(T, 8, 40).cuda()
            targets = torch.randint(1, 30, (8, 20)).cuda()
            step = 0
            while True:
                lengths = torch.full((8,), T, dtype=torch.long)
                target_lengths = torch.tensor([17, 15, 9, 12, 17, 3, 7, 11])
                if step:  # the second step with its lengths on the GPU
                    lengths, target_lengths = lengths.cuda(), target_lengths.cuda()
                ctc(head(x).log_softmax(-1), targets, lengths, target_lengths).backward()
                opt.step()
                opt.zero_grad()
                step += 1
        """
        for steps, large in ((100, False), (240, True)):
            rc, text, err, _ = run_probe(script, [str(steps)])
            self.assertEqual(rc, 0, err)
            trace = Trace(text)
            alpha = 8 * steps * (2 * 17 + 1) * 4
            alphas = [a[0] for a in trace.allocs.values() if a[2] == "_ctc_loss"]
            self.assertEqual(sorted(alphas), [8 * 4] * 2 + [alpha] * 2)
            grad, half = steps * 8 * 30 * 4, 8 * steps * (17 + 1) * 4
            made = [i for i, a in trace.allocs.items() if a[2] == "_ctc_loss_backward"]
            per_step = [alpha, grad] + ([half, half] if large else [])
            self.assertEqual([trace.allocs[i][0] for i in made], per_step * 2, steps)
            for step in range(2):  # log_beta: made first, freed once the gradient and temporaries were made
                beta, *rest = made[step * len(per_step):(step + 1) * len(per_step)]
                freed = trace.order.index(("F", beta))
                self.assertTrue(all(trace.order.index(("M", i)) < freed for i in rest))
                self.assertEqual(trace.frees[beta][0], "backward")

    def test_detection_models_train_with_their_targets_values(self):
        # torchvision's detection tutorial loop: targets (boxes, labels, masks) built on the host keep
        # their values (the models check that boxes have positive width and height), NMS keeps every
        # box (an upper bound: how many it keeps depends on the network's outputs), RoI Align runs on
        # its meta kernel, and the RoI pooler's `torch.full_like(..., device=device)` lands on the GPU.
        # Before, each of these stopped a detection script.
        rc, text, err, _ = run_probe("""
            import torch, torchvision
            model = torchvision.models.detection.maskrcnn_resnet50_fpn(
                weights=None, weights_backbone=None, num_classes=3, min_size=320, max_size=320).cuda()
            opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.01, momentum=0.9)
            def target():
                boxes = torch.tensor([[10.0, 20.0, 100.0, 120.0], [50.0, 60.0, 200.0, 220.0]])
                masks = torch.zeros(2, 240, 320, dtype=torch.uint8)
                masks[0, 20:120, 10:100] = 1
                masks[1, 60:220, 50:200] = 1
                return {"boxes": boxes.cuda(), "labels": torch.tensor([1, 2]).cuda(), "masks": masks.cuda()}
            model.train()
            while True:
                images = [torch.rand(3, 240, 320).cuda() for _ in range(2)]
                losses = model(images, [target(), target()])
                loss = sum(losses.values())
                opt.zero_grad()
                loss.backward()
                opt.step()
        """)
        self.assertEqual(rc, 0, err)
        t = Trace(text)
        ops = {a[2] for a in t.allocs.values()}
        self.assertTrue({"torchvision::nms", "torchvision::roi_align", "torchvision::_roi_align_backward", "full_like"} <= ops,
                        sorted(ops))
        # The sample the probe assumes (detection.py): 512 proposals per image for the box head (its
        # class logits), 128 of them positive for the mask head (its 28x28 mask logits). Before, with
        # no values, every proposal (2 002 per image) ran through both heads.
        sizes = {(a[2], a[0]) for a in t.allocs.values()}
        self.assertIn(("addmm", 2 * 512 * 3 * 4), sizes)
        self.assertIn(("convolution", 2 * 128 * 3 * 28 * 28 * 4), sizes)
        self.assertNotIn(("addmm", 2 * 2002 * 3 * 4), sizes)

    def test_multi_scale_detection_training_takes_its_largest_scale(self):
        # An R-CNN given several min_size values (Keypoint R-CNN's default is 640..800) resizes each
        # step's pictures to one drawn at random: the probe's estimate changed from run to run. The
        # job's caching allocator keeps what its largest scale needs once drawn: the probe takes it.
        rc, text, err, _ = run_probe("""
            import torch, torchvision
            model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_fpn(
                weights=None, weights_backbone=None, num_classes=3, min_size=tuple(range(64, 320, 4)) + (320,),
                max_size=640).cuda()
            opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.01)
            target = {"boxes": torch.tensor([[10.0, 20.0, 100.0, 120.0]]).cuda(), "labels": torch.tensor([1]).cuda()}
            model.train()
            while True:
                losses = model([torch.rand(3, 240, 320).cuda()], [target])
                opt.zero_grad()
                sum(losses.values()).backward()
                opt.step()
        """)
        self.assertEqual(rc, 0, err)
        # The picture resized to 320 on its short side (240 x 320 -> 320 x 427), once a step
        resized = [a for a in Trace(text).allocs.values() if a[2] == "upsample_bilinear2d" and a[1] == "forward"]
        self.assertEqual([a[0] for a in resized], [3 * 320 * 426 * 4] * 2, resized)

    def test_repeat_interleave_by_a_count_copies_once_as_pytorch2_does(self):
        # Grouped-query attention's `k.repeat_interleave(n_rep, dim=1)` (and torchvision's MViT-v1,
        # whose temporal position table is repeated so): PyTorch 1.13 turns the count into a tensor
        # on the input's device and reads its values, which the probe's meta tensors have not, so
        # the script stopped; PyTorch 2 expands the input and copies it once, as the probe now does.
        rc, text, err, _ = run_probe("""
            import torch
            w = torch.randn(64, 64, device="cuda", requires_grad=True)
            opt = torch.optim.SGD([w], lr=0.1)
            while True:
                k = (torch.randn(8, 4, 32, 64, device="cuda") @ w).repeat_interleave(2, dim=1)
                v = torch.repeat_interleave(k[:, :1], 3, dim=-3)              # the function, a negative dim
                flat = k[0, 0, 0].repeat_interleave(torch.tensor([1] * 63 + [2], device="cuda"))  # by counts
                (k.sum() + v.sum() + flat.sum()).backward()
                opt.step()
        """)
        self.assertEqual(rc, 0, err)
        allocs = list(Trace(text).allocs.values())
        self.assertEqual([a[0] for a in allocs if a[2] == "clone" and a[1] != "backward"],
                         [8 * 8 * 32 * 64 * 4, 8 * 3 * 32 * 64 * 4] * 2)  # k and v, once a step
        self.assertEqual([a[0] for a in allocs if a[2] == "index_select"], [65 * 4] * 2)  # by counts: 65 elements

    def test_tensors_made_like_others_on_the_gpu_are_recorded(self):
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            model = nn.Linear(256, 256).cuda()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            host = torch.ones(128, 256)
            while True:
                a = torch.zeros_like(host, device="cuda")                 # a host tensor's shape, on the GPU
                b = host.new_full((64, 256), 2.0, device=torch.device("cuda"))
                c = torch.full_like(a, 3.0, device=a.device)
                (model(a).sum() + model(b).sum() + model(c).sum()).backward()
                opt.step()
        """)
        self.assertEqual(rc, 0, err)
        made = [a for a in Trace(text).allocs.values() if a[2] in ("zeros_like", "new_full", "full_like")]
        self.assertEqual(sorted((a[2], a[0]) for a in made)[:3],
                         [("full_like", 128 * 256 * 4), ("full_like", 128 * 256 * 4), ("new_full", 64 * 256 * 4)])

    def test_tied_weights_stay_one_parameter_and_data_ptr_tells_storages_apart(self):
        # model.cuda() made a tied weight two Parameters (two gradients, two Adam states). And a common
        # idiom keys parameters by data_ptr() (dedup, tied weights): a meta tensor's is 0 for
        # every storage, so this script optimised one parameter, and the trace lacked Adam's state of
        # the rest. The checks run in the script; a failed one stops it with status 1.
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            emb = nn.Embedding(1000, 64)
            head = nn.Linear(64, 1000, bias=False)
            head.weight = emb.weight                                   # tied
            model = nn.Sequential(emb, nn.Linear(64, 64), head).cuda()
            ptrs = [p.data_ptr() for p in model.parameters()]
            assert len(set(ptrs)) == len(ptrs) == 3 and 0 not in ptrs, ptrs
            assert head.weight.data_ptr() == emb.weight.data_ptr()
            w = model[1].weight
            assert w[1].data_ptr() == w.data_ptr() + 64 * 4            # a view: the storage's address + offset
            assert torch.empty(0, device="cuda").data_ptr() == 0       # as CUDA's empty tensors
            unique = {}
            for m in model.modules():
                for p in m.parameters(recurse=False):
                    unique.setdefault(p.data_ptr(), p)
            opt = torch.optim.Adam(unique.values(), lr=1e-3)
            while True:
                x = torch.randint(0, 1000, (8, 16), device="cuda")
                model(x).sum().backward()
                opt.step()
                opt.zero_grad()
        """)
        self.assertEqual(rc, 0, err)
        state = [a for a in Trace(text).allocs.values() if a[1] == "optimizer" and a[3] == 1]
        # exp_avg and exp_avg_sq of all three parameters (the 1000x64 table, 64x64, the bias 64)
        sizes = sorted(a[0] for a in state if a[2] in ("zeros_like", "empty_like", "zeros"))
        self.assertEqual(sizes.count(1000 * 64 * 4), 2, state)
        self.assertEqual(sizes.count(64 * 64 * 4), 2, state)

    def test_a_checkpoint_loaded_onto_the_gpu_is_there_as_pytorch_places_it(self):
        # Resuming (`torch.load(path, map_location="cuda")`) failed on the CPU-only PyTorch ("Storage
        # device not recognized"); a checkpoint saved on a GPU, loaded without map_location, too.
        d = tempfile.mkdtemp(prefix="colo-ckpt-")
        _DIRS.append(d)
        model = nn.Sequential(nn.Embedding(1000, 64), nn.Linear(64, 1000, bias=False))
        model[1].weight = model[0].weight  # tied: saved once
        opt = torch.optim.Adam(model.parameters())
        model(torch.zeros(2, 3, dtype=torch.long)).sum().backward()
        opt.step()
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "epoch": 7}, f"{d}/cpu.pt")
        # The same saved from a GPU: storages tagged 'cuda:0' (PyTorch's own location-tag registry).
        torch.serialization.register_package(0, lambda obj: "cuda:0", lambda obj, location: None)
        try:
            torch.save({"model": model.state_dict()}, f"{d}/gpu.pt")
        finally:
            del torch.serialization._package_registry[0]
        table = 1000 * 64 * 4
        script = """
            import sys, torch, torch.nn as nn
            model = nn.Sequential(nn.Embedding(1000, 64), nn.Linear(64, 1000, bias=False)).cuda()
            model[1].weight = model[0].weight
            opt = torch.optim.Adam(model.parameters())
            where = {"cuda": "cuda", "cpu": "cpu", "none": None, "dict": {"cuda:0": "cpu"},
                     "keep": lambda s, loc: s, "move": lambda s, loc: s.cuda(), "gpu1": "cuda:1"}[sys.argv[2]]
            ck = torch.load(sys.argv[1], map_location=where)
            model.load_state_dict(ck["model"])
            if "opt" in ck:
                opt.load_state_dict(ck["opt"])
                assert ck["epoch"] == 7
            while True:
                model(torch.zeros(8, 16, dtype=torch.long, device="cuda")).sum().backward()
                opt.step()
        """
        # (file, placement, what torch.load puts on the GPU, tables moved by .to: the model's own two,
        # and Adam's moments where they were loaded onto the host)
        for path, where, loaded, moved in (("cpu.pt", "cuda", [table] * 3, 2), ("cpu.pt", "move", [table] * 3, 2),
                                           ("gpu.pt", "none", [table], 2), ("cpu.pt", "cpu", [], 4),
                                           ("cpu.pt", "keep", [], 4), ("gpu.pt", "dict", [], 2)):
            rc, text, err, _ = run_probe(script, script_args=(f"{d}/{path}", where))
            self.assertEqual(rc, 0, f"{path} {where}: {err}")
            allocs = Trace(text).allocs.values()
            got = sorted(a[0] for a in allocs if a[2] == "torch.load" and a[0] >= table)
            # the tied table once; with the optimizer's state, its two moments
            self.assertEqual(got, loaded, f"{path} {where}")
            # and nothing else at load (no second copy of what was read; the model's Linear table is freed
            # when tied), but 1.13's Optimizer.load_state_dict deep-copying the state it is given
            ops = collections.Counter(a[2] for a in allocs if a[1] == "load" and a[0] >= table)
            self.assertEqual((ops["to_cuda"], ops["torch.load"]), (moved, len(loaded)), f"{path} {where}: {ops}")
            self.assertEqual(sum(ops.values()) - ops["clone"], moved + len(loaded), f"{path} {where}: {ops}")
        # a whole module saved (torch.save(model)), loaded onto the GPU and trained
        torch.save(model, f"{d}/module.pt")
        rc, text, err, _ = run_probe("""
            import sys, torch
            model = torch.load(sys.argv[1], map_location="cuda:0", weights_only=False)  # 2.6 defaults to True
            assert model[1].weight is model[0].weight
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            while True:
                model(torch.zeros(8, 16, dtype=torch.long, device="cuda")).sum().backward()
                opt.step()
        """, script_args=(f"{d}/module.pt",))
        self.assertEqual(rc, 0, err)
        self.assertEqual(sorted(a[0] for a in Trace(text).allocs.values() if a[1] == "load" and a[0] >= table), [table])
        rc, text, err, _ = run_probe(script, script_args=(f"{d}/gpu.pt", "gpu1"))
        self.assertEqual(rc, 1)
        self.assertIn("Attempting to deserialize object on CUDA device 1 but torch.cuda.device_count() is 1", err)

    def test_torchscript_modules_train_as_their_eager_modules(self):
        # A scripted or traced module ran in TorchScript's interpreter, which aborted the probe process
        # (a C++ terminate: no trace, no reason), and a scripted function with F.relu failed in its
        # backward. What the script compiles is now the eager code, as torch.compile's is.
        script = """
            import sys, torch, torch.nn as nn
            import torch.nn.functional as F
            import torch.distributed.optim  # scripts its functional optimizers, whose names are F.*
            jit = sys.argv[1] == "jit"
            @torch.jit.script
            def bias_gelu(bias, y):
                x = F.relu(bias + y)
                return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))
            body = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64)).cuda()
            head = nn.Linear(64, 10).cuda()
            if jit:
                body = torch.jit.script(body)
                head = torch.jit.trace(head, torch.randn(2, 64, device="cuda"))
            bias = nn.Parameter(torch.zeros(64, device="cuda"))
            opt = torch.optim.Adam([*body.parameters(), *head.parameters(), bias])
            while True:
                x = torch.randn(32, 64, device="cuda")
                head(bias_gelu(bias, body(x))).logsumexp(1).mean().backward()
                opt.step()
                opt.zero_grad()
        """
        rc, jitted, err, _ = run_probe(script, script_args=("jit",))
        self.assertEqual(rc, 0, err)
        rc, eager, err, _ = run_probe(script, script_args=("eager",))
        self.assertEqual(rc, 0, err)
        sizes = lambda text: sorted(a[0] for a in Trace(text).allocs.values() if a[1] != "load")  # noqa: E731
        self.assertEqual(sizes(jitted), sizes(eager))
        rc, _, err, _ = run_probe("""
            import torch
            model = torch.jit.load("model.pt")
        """)
        self.assertNotEqual(rc, 0)
        self.assertIn("torch.jit.load: a TorchScript model file runs in TorchScript's interpreter", err)

    def test_a_disabled_autocast_region_inside_an_enabled_one_casts_nothing(self):
        # autocast(enabled=False) within the forward's region did nothing: the enclosing region went
        # on casting, so a float32 head or loss was recorded in float16 (half its bytes), and
        # torch.is_autocast_enabled() was False everywhere, so custom_fwd(cast_inputs=float32)
        # never cast. Each check runs in the script: a failed one stops it with status 1.
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            from torch.cuda.amp import custom_fwd
            class Fp32Matmul(torch.autograd.Function):
                @staticmethod
                @custom_fwd(cast_inputs=torch.float32)
                def forward(ctx, x, w):
                    assert not torch.is_autocast_enabled() and x.dtype == torch.float32
                    ctx.save_for_backward(x, w)
                    return x.mm(w)
                @staticmethod
                def backward(ctx, g):
                    x, w = ctx.saved_tensors
                    return g.mm(w.t()), x.t().mm(g)
            body, head = nn.Linear(512, 512).cuda(), nn.Linear(512, 384).cuda()
            w = nn.Parameter(torch.randn(512, 320, device="cuda"))
            opt = torch.optim.SGD([*body.parameters(), *head.parameters(), w], lr=0.1)
            while True:
                with torch.autocast("cuda", dtype=torch.float16):
                    h = body(torch.randn(256, 512, device="cuda"))
                    assert h.dtype == torch.float16 and torch.is_autocast_enabled()
                    assert torch.get_autocast_gpu_dtype() == torch.float16
                    with torch.autocast("cuda", enabled=False):
                        assert not torch.is_autocast_enabled()
                        out = head(h.float())
                        assert out.dtype == torch.float32, out.dtype
                        with torch.autocast("cuda", dtype=torch.bfloat16):  # enabled again, another dtype
                            assert head(h.float()).dtype == torch.bfloat16
                            assert torch.get_autocast_gpu_dtype() == torch.bfloat16
                    y = Fp32Matmul.apply(h, w)
                    assert y.dtype == torch.float32, y.dtype
                (out.sum() + y.sum()).backward()
                opt.step()
        """)
        self.assertEqual(rc, 0, err)
        forward = [a for a in Trace(text).allocs.values() if a[1] == "forward"]
        self.assertIn(256 * 384 * 4, [a[0] for a in forward if a[2] == "addmm"])  # the head, in float32
        self.assertIn(256 * 320 * 4, [a[0] for a in forward if a[2] == "mm"])     # custom_fwd's, in float32

    def test_attention_under_autocast_runs_in_the_regions_precision(self):
        # SDPA is on autocast's float16 list; the probe's SDPA (the fused kernel's memory) is a Python
        # function the region did not see, so float32 q, k, v stayed float32, and so did the output
        # and everything the kernel keeps. Checked in the script: a failed check is status 1.
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn, torch.nn.functional as F
            proj = nn.Linear(64, 3 * 64).cuda()
            opt = torch.optim.SGD(proj.parameters(), lr=0.1)
            while True:
                q, k, v = proj(torch.randn(2, 256, 64, device="cuda")).view(2, 256, 3, 4, 16).permute(2, 0, 3, 1, 4)
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    assert out.dtype == torch.bfloat16, out.dtype
                    with torch.autocast("cuda", enabled=False):
                        assert F.scaled_dot_product_attention(q, k, v).dtype == torch.float32
                out.float().sum().backward()
                opt.step()
        """)
        self.assertEqual(rc, 0, err)
        cast = [a for a in Trace(text).allocs.values() if a[1] == "forward" and a[2] == "_to_copy"]
        self.assertGreaterEqual(len([a for a in cast if a[0] == 2 * 4 * 256 * 16 * 2]), 3)  # q, k, v in bfloat16

    def test_an_audio_front_end_makes_its_window_on_the_gpu(self):
        # torch.hann_window(..., device="cuda") (torch.stft's window) and the other signal windows,
        # frequency and index grids were not the probe's factories: the CPU-only build refused the
        # device ("Could not run 'aten::empty.memory_format' ... 'CUDA' backend").
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            net = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                nn.Linear(8, 10)).cuda()
            opt = torch.optim.Adam(net.parameters())
            win = torch.hann_window(512, device="cuda")
            grids = [torch.hamming_window(64, device="cuda"), torch.blackman_window(64, device="cuda"),
                     torch.bartlett_window(64, device="cuda"), torch.kaiser_window(64, device="cuda"),
                     torch.fft.rfftfreq(512, device="cuda"), torch.tril_indices(16, 16, device="cuda")]
            assert all(g.is_cuda for g in grids) and win.is_cuda
            assert int(torch.tril_indices(4, 4, device="cuda")[0, -1]) == 3  # values kept, as small factories'
            while True:
                wav = torch.randn(8, 16000, device="cuda")
                spec = torch.stft(wav, n_fft=512, hop_length=128, window=win, return_complex=True).abs().pow(2)
                loss = nn.functional.cross_entropy(net(torch.log1p(spec).unsqueeze(1)),
                                                   torch.randint(0, 10, (8,), device="cuda"))
                loss.backward()
                opt.step()
                opt.zero_grad()
        """)
        self.assertEqual(rc, 0, err)
        allocs = Trace(text).allocs.values()
        self.assertIn((512 * 4, "hann_window"), [(a[0], a[2]) for a in allocs])
        self.assertIn(8 * 257 * 126 * 8, [a[0] for a in allocs if a[2] == "_fft_r2c"])  # the complex64 spectrogram

    def test_one_hot_labels_are_made_as_cuda_makes_them(self):
        # F.one_hot on the GPU: PyTorch 1.13 refused the probe's tensors even given the class count
        # ("Can not infer total number of classes from meta tensor"); PyTorch 2 took a traceable path
        # (an arange, a bool comparison, its int64 copy). CUDA makes one int64 tensor and scatters.
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn, torch.nn.functional as F
            net = nn.Linear(32, 10).cuda()
            opt = torch.optim.SGD(net.parameters(), lr=0.1)
            while True:
                y = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6], device="cuda")
                a = F.one_hot(y, num_classes=10)
                b = F.one_hot(y)  # the count from the labels' values: 10
                assert a.shape == (8, 10) and b.shape == (8, 10) and a.dtype == torch.int64, (a.shape, b.shape)
                assert int(a[2].argmax()) == 4 and int(b.sum()) == 8  # its values, where the labels have them
                (net(torch.randn(8, 32, device="cuda")) * (a + b)).sum().backward()
                opt.step()
        """)
        self.assertEqual(rc, 0, err)
        allocs = Trace(text).allocs.values()
        self.assertEqual([a[0] for a in allocs if a[2] == "new_zeros"], [8 * 10 * 8] * 4)  # two per step
        self.assertFalse([a for a in allocs if a[2] in ("eq", "arange")])

    def test_a_mask_with_known_values_sizes_what_it_selects_from_unknown_ones(self):
        # A language model's loss over the tokens that count: `logits[labels != -100]`. The labels'
        # values are known (made by the script), the logits' are not; the probe kept every row of the
        # logits (as if the mask were all true) and the cross-entropy then refused the two sizes.
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn, torch.nn.functional as F
            net = nn.Linear(16, 100).cuda()
            opt = torch.optim.SGD(net.parameters(), lr=0.1)
            while True:
                y = torch.randint(0, 100, (4, 10), device="cuda")
                y[:, 7:] = -100
                y[0, 0] = -100
                mask = y != -100
                logits = net(torch.randn(4, 10, 16, device="cuda"))
                picked = logits[mask]
                assert picked.shape == (27, 100), picked.shape
                assert torch.masked_select(logits, mask.unsqueeze(-1)).shape == (2700,)
                assert logits.flatten(0, 1).repeat_interleave(mask.flatten().long(), dim=0).shape == (27, 100)
                big = torch.randn(1 << 17, device="cuda")  # too large to keep values of
                unknown = (big[:4] > 0).long() + 1  # counts made from values the probe lacks
                assert logits.repeat_interleave(unknown, dim=0).shape == (4, 10, 100)  # each once
                F.cross_entropy(picked, y[mask]).backward()
                opt.step()
        """)
        self.assertEqual(rc, 0, err)
        allocs = Trace(text).allocs.values()
        self.assertEqual([a[0] for a in allocs if a[2] == "index"].count(27 * 100 * 4), 2)  # one per step

    def test_finiteness_checks_pass_as_in_a_healthy_run(self):
        # The values of the logits and the gradients' norm are unknown to the probe; a host read of an
        # unknown boolean reads True, so `if torch.isnan(loss): continue` skipped every step and
        # clip_grad_norm_(error_if_nonfinite=True) raised. A recorded run is a healthy one: finite.
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn, torch.nn.functional as F
            net = nn.Linear(512, 1000).cuda()
            opt = torch.optim.SGD(net.parameters(), lr=0.1)
            for _ in range(4):  # bounded: skipping every step must fail, not loop
                logits = net(torch.randn(256, 512, device="cuda"))
                loss = F.cross_entropy(logits, torch.randint(0, 1000, (256,), device="cuda"))
                if torch.isnan(loss) or torch.isinf(loss).any() or not torch.isfinite(loss):
                    continue
                if torch.isnan(logits).any() or (logits != logits).any() or (logits == float("inf")).any():
                    continue  # 256 000 elements: more than the probe keeps values of
                assert torch.isfinite(logits).all() and not torch.isposinf(logits).any()
                loss.backward()
                nn.utils.clip_grad_norm_(net.parameters(), 1.0, error_if_nonfinite=True)
                opt.step()
                opt.zero_grad()
        """)
        self.assertEqual(rc, 0, err)
        self.assertEqual(footer(text)["cpu_fallbacks"], {})
        self.assertGreaterEqual(footer(text)["value_reads"], 8)  # assumed, not known: counted

    def test_functions_that_make_a_gpu_tensor_inside_themselves_get_it_from_the_probe(self):
        # F.embedding_bag of equal-length bags makes its offsets, fractional max pooling its random
        # samples, on the input's device, inside a call the probe's torch-function mode handles (so
        # it does not see them): they were asked of the real CUDA, which a CPU build lacks.
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            bag = nn.EmbeddingBag(1000, 64, mode="max").cuda()
            pool2, pool3 = nn.FractionalMaxPool2d(3, output_ratio=0.5).cuda(), nn.FractionalMaxPool3d(2, output_size=3).cuda()
            opt = torch.optim.SGD(bag.parameters(), lr=0.1)
            while True:
                words = torch.randint(0, 1000, (32, 7), device="cuda")
                w = torch.rand(32, 7, device="cuda")
                pooled = bag(words) + nn.functional.embedding_bag(words, bag.weight, per_sample_weights=w, mode="sum")
                assert pooled.shape == (32, 64)
                x2 = torch.randn(4, 8, 16, 16, device="cuda", requires_grad=True)
                x3 = torch.randn(8, 6, 6, 6, device="cuda", requires_grad=True)  # unbatched
                assert pool2(x2).shape == (4, 8, 8, 8) and pool3(x3).shape == (8, 3, 3, 3)
                (pooled.sum() + pool2(x2).sum() + pool3(x3).sum()).backward()
                opt.step()
        """)
        self.assertEqual(rc, 0, err)
        allocs = list(Trace(text).allocs.values())
        self.assertEqual([a[0] for a in allocs if a[2] == "arange"], [32 * 8] * 4)  # two bags a step
        samples = collections.Counter(a[0] for a in allocs if a[2] == "rand")
        # each pooling runs twice a step: rand(1, 8, 3) for the unbatched 3-D input, rand(4, 8, 2) for the 2-D
        self.assertEqual((samples[1 * 8 * 3 * 4], samples[4 * 8 * 2 * 4]), (4, 4))

    def test_any_python_function_the_probe_handles_makes_its_gpu_tensors_on_the_probe(self):
        # The same, in general: MultiheadAttention's add_zero_attn (torch.zeros on k's device inside
        # F.multi_head_attention_forward), torch.unravel_index (PyTorch 2.2+: torch.tensor(coefs,
        # device=indices.device)) and a script's own function dispatching as PyTorch's do. Before,
        # each was asked of the real CUDA. What the mode replaces while inside is restored after,
        # when the function raises too.
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            from torch.overrides import has_torch_function, handle_torch_function
            real_zeros, real_to = torch.zeros, torch.Tensor.to

            def positions(x):  # a library function written as torch.nn.functional's are
                if has_torch_function((x,)):
                    return handle_torch_function(positions, (x,), x)
                return x + torch.arange(x.size(-1), device=x.device, dtype=x.dtype).to(x.device)

            m = nn.MultiheadAttention(64, 4, add_zero_attn=True, add_bias_kv=True).cuda()
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            while True:
                x = positions(torch.randn(10, 4, 64, device="cuda"))
                out, weights = m(x, x, x)
                assert out.shape == (10, 4, 64) and weights.shape == (4, 10, 12)  # 10 keys + bias_kv + zero
                if hasattr(torch, "unravel_index"):
                    rows, cols = torch.unravel_index(torch.tensor([5, 17], device="cuda"), (4, 4))
                    assert rows.is_cuda and rows.tolist() == [1, 0] and cols.tolist() == [1, 1], (rows, cols)
                try:
                    nn.functional.embedding_bag(torch.zeros(2, 3, dtype=torch.long, device="cuda"), m.out_proj.weight,
                                                mode="median")
                except ValueError:
                    pass
                assert torch.zeros is real_zeros and torch.Tensor.to is real_to
                assert torch.zeros(2).device.type == "cpu"
                out.sum().backward()
                opt.step()
        """)
        self.assertEqual(rc, 0, err)
        allocs = list(Trace(text).allocs.values())
        # add_zero_attn: zeros(batch * heads, 1, head dim) for the keys and the values, float32
        self.assertEqual([a[0] for a in allocs if a[2] == "zeros" and a[0] == 4 * 4 * 16 * 4], [4 * 4 * 16 * 4] * 4)
        self.assertEqual(len([a for a in allocs if a[2] == "arange" and a[0] == 64 * 4]), 2)
        self.assertEqual(footer(text)["cpu_fallbacks"], {})

    def test_a_model_built_on_the_meta_device_costs_nothing_until_to_empty(self):
        # Large-model code builds on the meta device (device="meta", or `with torch.device("meta")`
        # on PyTorch 2) and allocates with to_empty. The probe took "meta" for its own GPU: the
        # weights were counted at construction, .device said cuda, .to("cuda") copied tensors that
        # have no data, and to_empty kept a tied weight tied where PyTorch 2 unties it (the head's
        # copy and its optimizer state were missing).
        script = """
            import torch, torch.nn as nn

            class Net(nn.Module):
                def __init__(self, device=None):
                    super().__init__()
                    self.emb = nn.Embedding(1000, 256, device=device)
                    self.body = nn.Linear(256, 256, device=device)
                    self.head = nn.Linear(256, 1000, bias=False, device=device)
                    self.head.weight = self.emb.weight

                def forward(self, x):
                    return self.head(torch.relu(self.body(self.emb(x))))

            m = Net(device="meta")
            assert all(p.is_meta and p.device.type == "meta" for p in m.parameters())
            if hasattr(torch.device, "__enter__"):
                with torch.device("meta"):
                    assert Net().emb.weight.is_meta
            assert torch.cuda.memory_allocated() == 0
            try:
                m.to("cuda")
                raise AssertionError("a meta tensor was copied")
            except NotImplementedError as e:
                assert "meta" in str(e), e
            m = m.to_empty(device="cuda")
            assert m.emb.weight.is_cuda and not m.emb.weight.is_meta
            print("tied", m.head.weight is m.emb.weight)
            for p in m.parameters():
                nn.init.normal_(p, std=0.02)
            opt = torch.optim.AdamW(m.parameters())
            while True:
                m(torch.randint(0, 1000, (8, 16), device="cuda")).logsumexp(-1).mean().backward()
                opt.step()
                opt.zero_grad()
        """
        rc, text, err, _ = run_probe(script)
        self.assertEqual(rc, 0, err)

        class Net(nn.Module):  # what the installed PyTorch itself does, on the CPU
            def __init__(self):
                super().__init__()
                self.emb, self.head = nn.Embedding(1000, 256, device="meta"), nn.Linear(256, 1000, bias=False, device="meta")
                self.head.weight = self.emb.weight
        ref = Net().to_empty(device="cpu")
        tied = ref.head.weight is ref.emb.weight
        allocs = list(Trace(text).allocs.values())
        weights = sorted(a[0] for a in allocs if a[2] == "empty_like")
        expected = sorted([1000 * 256 * 4] * (1 if tied else 2) + [256 * 256 * 4, 256 * 4])
        self.assertEqual(weights, expected)
        self.assertFalse([a for a in allocs if a[2] in ("param", "empty", "to_cuda") and a[0] >= 256 * 256 * 4])
        # AdamW's two moments for each distinct weight
        moments = sorted(a[0] for a in allocs if a[1] == "optimizer" and a[2] == "zeros_like")
        self.assertEqual(moments, sorted(expected * 2))

    def test_lazy_modules_moved_to_the_gpu_before_their_first_forward(self):
        # nn.LazyLinear / LazyConv2d / LazyBatchNorm2d shape their weights at the first forward;
        # `model.cuda()` before it moves empty placeholders, which the probe's move asked for a
        # shape ("Can't access the shape of an uninitialized parameter").
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            m = nn.Sequential(nn.LazyConv2d(16, 3), nn.LazyBatchNorm2d(), nn.ReLU(), nn.Flatten(), nn.LazyLinear(10)).cuda()
            assert all(p.device.type == "cuda" and p.is_cuda for p in m.parameters())
            m(torch.randn(2, 3, 32, 32, device="cuda"))  # the dry run that shapes them
            assert m[4].weight.shape == (10, 16 * 30 * 30) and m[4].weight.is_cuda and m[1].running_mean.is_cuda
            assert type(m[4]) is nn.Linear and isinstance(m[4].weight, nn.Parameter)
            opt = torch.optim.Adam(m.parameters())
            while True:
                nn.functional.cross_entropy(m(torch.randn(8, 3, 32, 32, device="cuda")),
                                            torch.randint(0, 10, (8,), device="cuda")).backward()
                opt.step()
                opt.zero_grad()
        """)
        self.assertEqual(rc, 0, err)
        allocs = list(Trace(text).allocs.values())
        weight = 10 * 16 * 30 * 30 * 4
        self.assertEqual(len([a for a in allocs if a[0] == weight and a[2] == "to_cuda"]), 1)
        self.assertEqual(len([a for a in allocs if a[0] == weight and a[1] == "optimizer" and a[2] == "zeros_like"]), 2)
        # LazyBatchNorm2d's running mean and variance, and the conv's and norm's parameters: on the GPU
        self.assertEqual(sorted(a[0] for a in allocs if a[2] == "to_cuda" and a[0] < weight),
                         sorted([16 * 3 * 3 * 3 * 4] + [16 * 4] * 5 + [10 * 4, 8]))

    def test_lazy_modules_moved_with_a_dtype_materialise_in_it(self):
        # model.to("cuda", torch.float16) before the first forward: PyTorch gives the uninitialised
        # parameters the dtype (integer buffers keep theirs) and materialises them in it. The probe
        # kept float32, so every lazy weight, its gradient and its optimizer state were counted twice
        # their size.
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            m = nn.Sequential(nn.LazyConv2d(16, 3), nn.LazyBatchNorm2d(), nn.Flatten(), nn.LazyLinear(10))
            m.to("cuda", torch.float16)
            m(torch.randn(2, 3, 32, 32, device="cuda", dtype=torch.float16))
            assert m[0].weight.dtype == m[3].weight.dtype == m[1].running_var.dtype == torch.float16
            assert m[1].num_batches_tracked.dtype == torch.int64 and m[3].weight.is_cuda
            m[2].half().to(torch.float32)  # no parameters: nothing to do
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            while True:
                m(torch.randn(8, 3, 32, 32, device="cuda", dtype=torch.float16)).float().sum().backward()
                opt.step()
                opt.zero_grad()
        """)
        self.assertEqual(rc, 0, err)
        loaded = sorted(a[0] for a in Trace(text).allocs.values() if a[2] == "to_cuda")
        self.assertEqual(loaded, sorted([10 * 16 * 30 * 30 * 2, 16 * 3 * 3 * 3 * 2] + [16 * 2] * 5 + [10 * 2, 8]))

    def test_legacy_cuda_tensor_types(self):
        # Older training code (PyTorch-GAN, 14 of its MNIST scripts) makes its GPU tensors through
        # the legacy types: `Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`, then
        # `Tensor(n, 1).fill_(1.0)`, `Tensor(np_array)`, `imgs.type(Tensor)`. A CPU build refuses
        # them all ("type torch.cuda.FloatTensor not available"), and so did the probe.
        rc, text, err, _ = run_probe("""
            import numpy as np, torch, torch.nn as nn
            cuda = torch.cuda.is_available()
            Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
            m = nn.Linear(16, 1)
            if cuda:
                m.cuda()
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            assert str(Tensor) == "torch.cuda.FloatTensor" and Tensor().shape == (0,)
            idx = torch.cuda.LongTensor([1, 2])
            assert idx.is_cuda and idx.dtype == torch.int64 and idx.tolist() == [1, 2]
            try:
                Tensor(torch.zeros(2))
                raise AssertionError("a host tensor made a GPU one")
            except TypeError as e:
                assert "expected torch.cuda.FloatTensor (got torch.FloatTensor)" in str(e), e
            while True:
                valid = Tensor(32, 1).fill_(1.0)
                imgs = torch.rand(32, 16).type(Tensor)
                z = Tensor(np.random.normal(0, 1, (32, 16)))
                assert isinstance(valid, Tensor) and isinstance(imgs, torch.cuda.FloatTensor)
                assert not isinstance(idx, Tensor) and imgs.type() == "torch.cuda.FloatTensor" and z.is_cuda
                assert z.type(torch.cuda.HalfTensor).dtype == torch.float16
                assert z.type("torch.cuda.DoubleTensor").dtype == torch.float64
                assert z.type("torch.cuda.ComplexFloatTensor").is_cuda and z.type(torch.cuda.ComplexFloatTensor).is_complex()
                assert not z.type(torch.FloatTensor).is_cuda and not z.type("torch.FloatTensor").is_cuda
                nn.functional.mse_loss(m(imgs + z), valid).backward()
                opt.step()
                opt.zero_grad()
        """)
        self.assertEqual(rc, 0, err)
        allocs = list(Trace(text).allocs.values())
        batch = 32 * 16 * 4
        self.assertEqual(len([a for a in allocs if a[0] == 32 * 4 and a[2] == "empty"]), 2)  # valid, once a step
        self.assertEqual(len([a for a in allocs if a[0] == batch and a[2] == "to_cuda"]), 2)  # imgs
        self.assertEqual(len([a for a in allocs if a[0] == batch and a[2] == "tensor"]), 2)  # z

    def test_a_legacy_default_tensor_type_on_the_gpu(self):
        # torch.set_default_tensor_type("torch.cuda.FloatTensor"): factories without device= make GPU
        # tensors, as a CUDA build's do, until a host type is set again.
        # torch.Tensor(sizes or data), the default type's legacy constructor, makes GPU tensors too:
        # a custom layer's nn.Parameter(torch.Tensor(out, in)) was left on the host, uncounted.
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            torch.set_default_tensor_type(torch.cuda.FloatTensor)
            m = nn.Linear(16, 4)  # built on the GPU
            assert m.weight.is_cuda and torch.zeros(2).is_cuda and torch.get_default_dtype() == torch.float32
            w = nn.Parameter(torch.Tensor(4, 16))
            assert w.is_cuda and w.shape == (4, 16) and torch.Tensor([1.0, 2.0]).is_cuda
            assert torch.Tensor(torch.Size([3])).shape == (3,) and isinstance(torch.Tensor(2), torch.cuda.FloatTensor)
            assert torch.Tensor(2, device="cuda:0").is_cuda and torch.cuda.FloatTensor(2, device="cuda").is_cuda
            for make in (lambda: torch.Tensor(2, device="cpu"), lambda: torch.cuda.LongTensor([1], device="cpu")):
                try:
                    make()
                    raise AssertionError("a GPU type's legacy constructor made a host tensor")
                except RuntimeError as e:
                    assert "expects device type: cuda but device type: cpu was passed" in str(e), e
            torch.set_default_tensor_type("torch.FloatTensor")
            assert not torch.zeros(2).is_cuda and not torch.Tensor(2).is_cuda
            # set_default_device's mode passes its device over the default type's, both ways
            torch.set_default_device("cuda")
            assert torch.zeros(2).is_cuda and not torch.Tensor(2).is_cuda  # PyTorch 2: the mode skips torch.Tensor()
            torch.set_default_tensor_type("torch.FloatTensor")
            assert torch.zeros(2).is_cuda, "a host default type ended set_default_device's"
            torch.set_default_device("cpu")
            torch.set_default_tensor_type("torch.cuda.FloatTensor")
            assert not torch.zeros(2).is_cuda and torch.get_default_device().type == "cpu"
            torch.set_default_device(None)
            assert torch.zeros(2).is_cuda and torch.get_default_device().type == "cuda"
            opt = torch.optim.SGD([*m.parameters(), w], lr=0.1)
            while True:
                (m(torch.randn(8, 16)).sum() + (w @ torch.ones(16)).sum()).backward()
                opt.step()
        """)
        self.assertEqual(rc, 0, err)
        allocs = list(Trace(text).allocs.values())
        self.assertEqual(len([a for a in allocs if a[0] == 8 * 16 * 4 and a[2] == "randn"]), 2)
        self.assertIn((4 * 16 * 4, "load", "empty"), [a[:3] for a in allocs])  # w, on the GPU

    def test_the_legacy_constructor_is_pytorchs_own_again_after_the_run(self):
        sys.path.insert(0, os.path.abspath(PYTHON_DIR))
        try:
            from colo_probe import factories, legacy_types, patches
        finally:
            sys.path.pop(0)
        p = patches.Patches()
        legacy_types.install(p, factories)
        self.assertIn("__new__", torch.Tensor.__dict__)
        self.assertEqual(torch.Tensor(2, 3).shape, (2, 3))  # a host default type: PyTorch's constructor
        self.assertIsInstance(torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter)
        p.undo()
        self.assertNotIn("__new__", torch.Tensor.__dict__)
        self.assertIsNot(torch.cuda.FloatTensor, legacy_types.TYPES["FloatTensor"])  # the CPU build's type again
        self.assertEqual(torch.Tensor([1.0, 2.0]).tolist(), [1.0, 2.0])

    def test_a_folded_matmul_returns_its_product_without_a_copy(self):
        # x @ w with a 3-D x runs as one mm on the flattened x, whose product PyTorch hands back
        # through _unsafe_view: a view sharing the mm's storage, though its schema declares no alias
        # (autograd is to treat it as a fresh tensor). The probe recorded a second allocation for
        # it, so every such product (a transformer's projections) was briefly counted twice.
        rc, text, err, _ = run_probe("""
            import torch
            w = torch.randn(64, 256, device="cuda", requires_grad=True)
            opt = torch.optim.SGD([w], lr=0.1)
            while True:
                x = torch.randn(8, 32, 64, device="cuda")
                (x @ w).sum().backward()
                opt.step()
        """)
        self.assertEqual(rc, 0, err)
        allocs = list(Trace(text).allocs.values())
        self.assertEqual([a[2] for a in allocs if a[0] == 8 * 32 * 256 * 4], ["mm", "mm"])  # once a step

    def test_a_recurrent_cell_splits_its_gates_without_a_copy(self):
        # An LSTM (or GRU) cell splits its gate product with unsafe_chunk: views of the product,
        # though the schema declares no alias. The probe recorded each chunk as an allocation of
        # its own (a 1-layer LSTM over 10 steps: 40 phantom allocations a training step).
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            m = nn.LSTM(32, 64).cuda()
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            while True:
                out, _ = m(torch.randn(10, 4, 32, device="cuda"))
                out.sum().backward()
                opt.step()
                opt.zero_grad()
        """)
        self.assertEqual(rc, 0, err)
        allocs = list(Trace(text).allocs.values())
        self.assertEqual([a for a in allocs if "split" in a[2] or "chunk" in a[2]], [])
        gates = 4 * 4 * 64 * 4  # [batch, 4 x hidden] float32, one a time step
        self.assertEqual(len([a for a in allocs if a[0] == gates and a[1] == "forward" and a[2] == "addmm"]), 2 * 10 * 2)

    def test_fused_attention_saves_its_output_without_a_copy(self):
        # The probe's fused attention detaches its output, which it saves for the backward, inside
        # the dispatcher; the probe's torch-function mode took the plain meta result for a new GPU
        # tensor with a storage of its own, so every attention output was counted twice while
        # saved (nanoGPT's shakespeare_char: 1 766 MiB reserved for 1 698).
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn, torch.nn.functional as F
            lin = nn.Linear(64, 192).cuda()
            opt = torch.optim.SGD(lin.parameters(), lr=0.1)
            while True:
                q, k, v = lin(torch.randn(4, 32, 64, device="cuda")).view(4, 32, 3, 4, 16).permute(2, 0, 3, 1, 4)
                F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=0.1).sum().backward()
                opt.step()
        """)
        self.assertEqual(rc, 0, err)
        allocs = list(Trace(text).allocs.values())
        self.assertEqual([a for a in allocs if a[2].endswith(".default")], [])
        out = 4 * 4 * 32 * 16 * 4  # [batch, heads, tokens, head dim] float32
        self.assertEqual(len([a for a in allocs if a[0] == out and a[1] == "forward"]), 2)  # once a step

    def test_torch_func_transforms_over_probe_tensors(self):
        # torch.func's grad and vmap (functorch on PyTorch 1.13): a gradient of a function that
        # closes over a GPU tensor, and DP-SGD's per-sample gradients. The probe's torch-function
        # mode took the transform's wrapper of a probe tensor (which says meta, as the probe tensor
        # underneath does) for a meta result of its own and wrapped it again, hiding it from the
        # transform: "Expected all tensors to be on the same device, but found at least two
        # devices, meta and cpu!". PyTorch 2's forward-mode AD scripts its decompositions at the first
        # make_dual, which the probe's eager torch.jit.script broke ("'function' object has no
        # attribute 'graph'").
        rc, text, err, _ = run_probe("""
            import torch, torch.nn as nn
            try:
                from torch.func import functional_call, grad, vmap
            except ImportError:  # PyTorch 1.13: functorch
                from functorch import grad, vmap
                from torch.nn.utils.stateless import functional_call
            x = torch.randn(8, 32, device="cuda")
            w0 = torch.randn(32, device="cuda")
            g = grad(lambda w: (x @ w).sum())(w0)  # closes over a GPU tensor
            assert g.shape == (32,) and g.is_cuda, g
            if hasattr(torch, "func"):  # forward-mode AD (PyTorch 2): its decompositions are scripted
                from torch.func import hessian, jacrev, jvp
                assert jacrev(lambda v: v.sin() * v)(w0).shape == (32, 32)
                assert hessian(lambda v: (v ** 3).sum())(w0).shape == (32, 32)
                assert jvp(lambda v: v.exp(), (w0,), (torch.ones_like(w0),))[1].shape == (32,)
            m = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 1)).cuda()
            opt = torch.optim.SGD(m.parameters(), lr=0.01)

            def loss(params, xi, yi):
                return ((functional_call(m, params, (xi.unsqueeze(0),)) - yi) ** 2).mean()

            while True:
                xb, yb = torch.randn(16, 32, device="cuda"), torch.randn(16, 1, device="cuda")
                params = {k: v.detach() for k, v in m.named_parameters()}
                per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, xb, yb)  # DP-SGD's per-sample gradients
                assert per_sample["0.weight"].shape == (16, 64, 32), per_sample["0.weight"].shape
                for k, p in m.named_parameters():
                    p.grad = per_sample[k].clamp(-1, 1).mean(0)
                opt.step()
        """)
        self.assertEqual(rc, 0, err)
        allocs = list(Trace(text).allocs.values())
        # each step's per-sample gradients of the first weight: 16 x 64 x 32 floats, made by bmm
        self.assertEqual(len([a for a in allocs if a[0] == 16 * 64 * 32 * 4 and a[2] == "bmm"]), 2)
        self.assertEqual(footer(text)["cpu_fallbacks"], {})


class Help(unittest.TestCase):
    """--help of the model form names the script form and how to list its options."""

    def run_probe(self, *args):
        env = dict(os.environ, PYTHONPATH=os.path.abspath(PYTHON_DIR))
        return subprocess.run([sys.executable, "-m", "colo_probe", *args], capture_output=True, text=True, env=env,
                              timeout=120)

    def test_the_model_form_points_to_the_script_form(self):
        r = self.run_probe("--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--model MODEL", r.stdout)
        self.assertIn("--script train.py [ARGS...]", " ".join(r.stdout.split()))
        r = self.run_probe("--help", "--script", "TRAIN.py")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--torchrun N", r.stdout)
        self.assertIn("--gpu-memory-mib", r.stdout)
