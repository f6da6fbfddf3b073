"""torch.distributed under --script (python/colo_probe/distributed.py): the script runs as rank 0
of its job, and what a DistributedDataParallel rank keeps on its GPU is recorded. The bucket
layout is checked against PyTorch's own: its bucket assignment function and a real
DistributedDataParallel run on the CPU (gloo, one process), whose reducer reports its buckets."""
import json
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402

from colo_probe.distributed import bucket_assignment  # noqa: E402
from probe_util import Trace  # noqa: E402
from test_script import footer, header, run_probe  # noqa: E402


def _ends(pidfd, timeout_s):
    """Whether the process behind `pidfd` (os.pidfd_open) exits: the descriptor becomes readable
    when it does; the time bound only decides when to call it a failure."""
    readable, _, _ = select.select([pidfd], [], [], timeout_s)
    return bool(readable)


def mlp():
    return nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 512), nn.ReLU(), nn.Linear(512, 10))


PARAM_NUMEL = 1024 * 4096 + 4096 + 4096 * 512 + 512 + 512 * 10 + 10

DDP_SCRIPT = """
    import os, sys
    import torch, torch.nn as nn
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group(backend="nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    print("world", dist.get_world_size(), "rank", dist.get_rank(), "master", os.environ["MASTER_ADDR"], file=sys.stderr)
    model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 512), nn.ReLU(), nn.Linear(512, 10)).cuda()
    model = DDP(model, device_ids=[local_rank], gradient_as_bucket_view="--view" in sys.argv)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    while True:
        x = torch.randn(8, 1024, device="cuda")
        loss = model(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        dist.all_reduce(loss.detach())
        opt.step()
"""


def real_ddp_buckets():
    """Bucket sizes (elements) of a real DistributedDataParallel over mlp() on the CPU: after
    construction and after each of two iterations."""
    f = tempfile.NamedTemporaryFile(delete=False)
    f.close()
    dist.init_process_group("gloo", init_method="file://" + f.name, world_size=1, rank=0)
    try:
        torch.manual_seed(0)
        model = nn.parallel.DistributedDataParallel(mlp())
        sizes = [[b.buffer().numel() for b in model.reducer._get_zeros_like_grad_buckets()]]
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(2):
            model(torch.randn(8, 1024)).square().mean().backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            sizes.append([b.buffer().numel() for b in model.reducer._get_zeros_like_grad_buckets()])
        return sizes
    finally:
        dist.destroy_process_group()
        os.unlink(f.name)


class BucketAssignment(unittest.TestCase):
    def test_matches_pytorchs_own_function_on_random_tensor_lists(self):
        rng = random.Random(7)
        dtypes = [torch.float32, torch.float16, torch.int64]
        for _ in range(200):
            tensors = [torch.empty(rng.choice([1, 10, 1000, 70000, 300000]), dtype=rng.choice(dtypes))
                       for _ in range(rng.randint(1, 12))]
            limits = rng.choice([[1 << 20, 25 << 20], [1 << 20], [4096, 8192, 100000], [sys.maxsize]])
            want = dist._compute_bucket_assignment_by_size(tensors, limits)
            want = want[0] if isinstance(want, tuple) else want  # PyTorch 2 also returns the limits
            self.assertEqual(bucket_assignment(tensors, limits), [list(b) for b in want], (tensors, limits))


class DistributedDataParallelScript(unittest.TestCase):
    def test_buckets_are_the_real_reducers_at_construction_and_after_the_rebuild(self):
        real = real_ddp_buckets()
        self.assertEqual(real[0], [PARAM_NUMEL])  # one bucket until the gradients' order is known
        rc, text, err, _ = run_probe(DDP_SCRIPT, probe_args=["--torchrun", "4"])
        self.assertEqual(rc, 0, err)
        t = Trace(text)
        buckets = sorted(t.by_op("ddp_bucket"))
        first = [a[0] // 4 for i, a in buckets if a[3] == 1 and a[1] == "load"]
        rebuilt = [a[0] // 4 for i, a in buckets if a[3] == 2]
        self.assertEqual(first, real[0])
        self.assertEqual(rebuilt, real[-1])
        self.assertNotEqual(real[-1], real[0])  # the rebuild happened: 1 MiB first, then 25 MiB
        # the construction-time bucket is freed when the rebuilt ones are made (buckets_ cleared)
        self.assertIn(buckets[0][0], t.frees)
        self.assertEqual(len([i for i, a in buckets if i not in t.frees]), len(real[-1]))
        self.assertIn("world 4 rank 0 master 127.0.0.1", err)
        self.assertEqual(header(text)["torchrun"], 4)
        self.assertEqual(header(text)["gpus"], 4)

    def test_an_explicit_bucket_cap_is_every_buckets_limit(self):
        # PyTorch 2: bucket_cap_mb given, no 1 MiB first bucket at the rebuild (1.13 kept one)
        rc, text, err, _ = run_probe(DDP_SCRIPT.replace("gradient_as_bucket_view=", "bucket_cap_mb=64, gradient_as_bucket_view="),
                                     probe_args=["--torchrun", "2"])
        self.assertEqual(rc, 0, err)
        rebuilt = [a[0] // 4 for i, a in sorted(Trace(text).by_op("ddp_bucket")) if a[3] == 2]
        ready = list(reversed(list(mlp().parameters())))  # a sequential network's gradients: last layer first
        want = dist._compute_bucket_assignment_by_size(ready, [64 << 20])
        want = want[0] if isinstance(want, tuple) else want
        self.assertEqual(rebuilt, [sum(ready[i].numel() for i in b) for b in want])
        self.assertEqual(rebuilt, [PARAM_NUMEL])  # 25 MB < 64 MiB: one bucket (1 MiB first would give two)

    def test_the_broadcast_at_construction_is_a_transient_flat_copy(self):
        rc, text, err, _ = run_probe(DDP_SCRIPT, probe_args=["--torchrun", "2"])
        self.assertEqual(rc, 0, err)
        t = Trace(text)
        copies = t.by_op("ddp_broadcast")
        self.assertEqual([a[0] for _, a in copies], [PARAM_NUMEL * 4])  # one bucket of 6 tensors < 250 MiB
        self.assertTrue(all(i in t.frees and t.frees[i][0] == "load" for i, _ in copies))

    def test_gradients_as_bucket_views_save_one_copy_of_the_gradients(self):
        rc, text, err, _ = run_probe(DDP_SCRIPT, probe_args=["--torchrun", "2"])
        self.assertEqual(rc, 0, err)
        rc, view_text, err, _ = run_probe(DDP_SCRIPT, ["--view"], probe_args=["--torchrun", "2"])
        self.assertEqual(rc, 0, err)
        grads = PARAM_NUMEL * 4
        # separate: parameters, gradients and buckets at the step; views: parameters and buckets
        self.assertGreaterEqual(footer(text)["peak_live_bytes"], 3 * grads)
        live_at_end = sum(a[0] for a in Trace(view_text).live_at_end().values())
        self.assertLess(live_at_end, 2 * grads + (1 << 20))
        self.assertGreater(sum(a[0] for a in Trace(text).live_at_end().values()), 3 * grads)

    def test_environment_is_torchruns_during_the_run_only(self):
        for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
            self.assertNotIn(k, os.environ)
        rc, text, err, _ = run_probe("""
            import os, torch, torch.distributed as dist
            assert os.environ["LOCAL_WORLD_SIZE"] == "3" and dist.is_torchelastic_launched()
            dist.init_process_group("nccl")
            m = torch.nn.Linear(4, 4).cuda()
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            while True:
                m(torch.ones(2, 4, device="cuda")).sum().backward(); opt.step()
        """, probe_args=["--torchrun", "3"])
        self.assertEqual(rc, 0, err)

    def test_without_torchrun_env_rendezvous_fails_as_it_would(self):
        rc, text, err, _ = run_probe("""
            import torch.distributed as dist
            dist.init_process_group("nccl")
        """)
        self.assertEqual(rc, 1)
        self.assertIn("WORLD_SIZE expected", err)
        self.assertEqual(len(err.strip().splitlines()[-1:]), 1)

    def test_more_processes_than_gpus_is_refused(self):
        rc, _, err, _ = run_probe("print(1)", probe_args=["--gpus", "2", "--torchrun", "4"])
        self.assertEqual(rc, 2)
        self.assertIn("--torchrun 4", err)

    def test_multiprocessing_spawn_runs_process_zero_here(self):
        rc, text, err, _ = run_probe("""
            import torch, torch.multiprocessing as mp, torch.distributed as dist
            from torch.utils.data.distributed import DistributedSampler

            def worker(gpu, ngpus):
                dist.init_process_group("nccl", init_method="tcp://127.0.0.1:1", world_size=ngpus, rank=gpu)
                sampler = DistributedSampler(list(range(100)))
                assert len(sampler) == 50, len(sampler)
                torch.cuda.set_device(gpu)
                m = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(64, 64).cuda(gpu), device_ids=[gpu])
                opt = torch.optim.Adam(m.parameters())
                while True:
                    m(torch.ones(4, 64)).sum().backward()  # CPU input: DDP moves it to device_ids[0]
                    opt.step()

            if __name__ == "__main__":
                n = torch.cuda.device_count()
                mp.spawn(worker, nprocs=n, args=(n,))
        """, probe_args=["--gpus", "2"])
        self.assertEqual(rc, 0, err)
        t = Trace(text)
        self.assertEqual(sorted(a[0] for _, a in t.by_op("ddp_bucket") if a[3] == 1), [(64 * 64 + 64) * 4])
        self.assertTrue(any(a[0] == 4 * 64 * 4 for _, a in t.allocs.items()))  # the moved input

    def test_no_sync_keeps_gradients_out_of_the_buckets_until_the_synchronised_step(self):
        rc, text, err, _ = run_probe("""
            import torch, torch.distributed as dist
            dist.init_process_group("nccl")
            m = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(256, 256).cuda(), gradient_as_bucket_view=True)
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            while True:
                with m.no_sync():
                    m(torch.ones(2, 256, device="cuda")).sum().backward()
                m(torch.ones(2, 256, device="cuda")).sum().backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
        """, probe_args=["--torchrun", "2", "--steps", "3"])
        self.assertEqual(rc, 0, err)
        t = Trace(text)
        params = (256 * 256 + 256) * 4
        # at the third optimizer step (the buckets were rebuilt in the second) the gradients the
        # unsynchronised pass left are bucket views: parameters + buckets are live, no third copy
        # (it was freed in the synchronised backward, once copied into its view)
        live = sum(a[0] for a in t.live_at_end().values())
        self.assertGreaterEqual(live, 2 * params)
        self.assertLess(live, 2 * params + params // 2)

    def test_sync_batch_norm_keeps_what_batch_norm_keeps(self):
        script = """
            import sys, torch, torch.nn as nn, torch.distributed as dist
            dist.init_process_group("nccl")
            m = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU())
            if "--sync" in sys.argv:
                m = nn.SyncBatchNorm.convert_sync_batchnorm(m)
            m = nn.parallel.DistributedDataParallel(m.cuda(), device_ids=[0])
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            while True:
                opt.zero_grad()
                m(torch.randn(8, 3, 32, 32, device="cuda")).sum().backward()
                opt.step()
        """
        rc, sync, err, _ = run_probe(script, ["--sync"], probe_args=["--torchrun", "2"])
        self.assertEqual(rc, 0, err)
        rc, plain, err, _ = run_probe(script, probe_args=["--torchrun", "2"])
        self.assertEqual(rc, 0, err)
        t = Trace(sync)
        activation = 8 * 64 * 32 * 32 * 4
        # CUDA's SyncBatchNorm kernels: a full-size output forward, a full-size input gradient backward
        self.assertEqual({a[0] for _, a in t.by_op("batch_norm_elemt")}, {activation})
        self.assertEqual({a[0] for _, a in t.by_op("batch_norm_backward_elemt")}, {activation})
        # the same full-size tensors as cuDNN's batch norm, give or take the per-channel statistics
        self.assertLess(abs(footer(sync)["peak_live_bytes"] - footer(plain)["peak_live_bytes"]), 64 * 1024)

    def test_pytorchs_ddp_example_picks_its_backend_for_the_accelerator(self):
        # pytorch/examples distributed/ddp/example.py (PyTorch 2.6's API), with two steps
        rc, text, err, _ = run_probe("""
            import os, torch, torch.distributed as dist
            acc = torch.accelerator.current_accelerator()
            backend = torch.distributed.get_default_backend_for_device(acc)
            assert backend == "nccl" and dist.get_default_backend_for_device("cpu") == "gloo", backend
            rank = int(os.environ["LOCAL_RANK"])
            torch.accelerator.set_device_index(rank)
            dist.init_process_group(backend=backend)
            assert dist.get_backend() == "nccl"
            model = torch.nn.Linear(10, 5).to(rank)
            ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
            opt = torch.optim.SGD(ddp.parameters(), lr=0.001)
            while True:
                opt.zero_grad()
                torch.nn.functional.mse_loss(ddp(torch.randn(20, 10)), torch.randn(20, 5).to(rank)).backward()
                opt.step()
        """, probe_args=["--torchrun", "2"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(sorted(a[0] for _, a in Trace(text).by_op("ddp_bucket") if a[3] == 1), [(10 * 5 + 5) * 4])
        rc, _, err, _ = run_probe("""
            import torch.distributed as dist
            dist.get_default_backend_for_device("meta")
        """)
        self.assertEqual(rc, 1)
        self.assertIn("Default backend not registered for device : meta", err)

    def test_zero_redundancy_optimizer_keeps_rank_zeros_share_of_the_state(self):
        # llm.c's --zero_stage 1: ZeroRedundancyOptimizer (PyTorch's own, under the probe's process
        # group) partitions the parameters across ranks; rank 0's AdamW keeps the moments of its
        # share only. Four equal layers over two ranks: two layers' moments, not four.
        script = """
            import sys, torch, torch.nn as nn, torch.distributed as dist
            from torch.distributed.optim import ZeroRedundancyOptimizer
            dist.init_process_group("nccl")
            model = nn.Sequential(*[nn.Linear(512, 512, bias=False) for _ in range(4)]).cuda()
            model = nn.parallel.DistributedDataParallel(model, device_ids=[0])
            if "--zero" in sys.argv:
                opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-3)
            else:
                opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
            while True:
                model(torch.randn(8, 512, device="cuda")).sum().backward()
                opt.step(); opt.zero_grad()
        """
        moments = {}
        for how in ("--zero", "--plain"):
            rc, text, err, _ = run_probe(script, [how], probe_args=["--torchrun", "2"])
            self.assertEqual(rc, 0, err)
            moments[how] = len([a for a in Trace(text).allocs.values()
                                if a[1] == "optimizer" and a[0] == 512 * 512 * 4 and a[2] == "zeros_like"])
        self.assertEqual(moments, {"--zero": 2 * 2, "--plain": 4 * 2})

    HOGWILD_SCRIPT = """
        import sys, torch, torch.nn as nn, torch.multiprocessing as mp

        def train(model):
            opt = torch.optim.SGD(model.parameters(), lr=0.01)
            loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 32)), batch_size=8,
                                                 num_workers=1)
            for (x,) in loader:  # a DataLoader worker process starts as before
                opt.zero_grad()
                model(x.cuda()).sum().backward()
                opt.step()

        if __name__ == "__main__":
            model = nn.Linear(32, 32).cuda()
            model.share_memory()  # a no-op for GPU tensors, as on CUDA
            if "--processes" in sys.argv:
                mp.set_start_method("spawn", force=True)
                p = mp.Process(target=train, args=(model,))
                p.start()
                p.join()
            train(model)
    """

    def test_one_process_sharing_its_gpu_model_is_estimated(self):
        rc, text, err, _ = run_probe(self.HOGWILD_SCRIPT)
        self.assertEqual(rc, 0, err)  # two optimizer steps were taken and recorded
        self.assertEqual(header(text)["optimizer"], "sgd")

    def test_processes_training_one_gpu_model_together_are_refused(self):
        rc, _, err, _ = run_probe(self.HOGWILD_SCRIPT, ["--processes"])
        self.assertEqual(rc, 1)
        self.assertIn("processes that train one GPU model together (torch.multiprocessing.Process with GPU tensors, "
                      "Hogwild) are not supported by the probe", err)

    def test_fsdp_is_refused_with_its_reason(self):
        # On PyTorch 1.13 and Python 3.11 too: FSDP imports there under the probe (torch113_imports.py).
        rc, _, err, _ = run_probe("""
            import torch, torch.distributed as dist
            from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
            dist.init_process_group("nccl")
            FSDP(torch.nn.Linear(4, 4).cuda())
        """, probe_args=["--torchrun", "2"])
        self.assertEqual(rc, 1)
        self.assertIn("FullyShardedDataParallel is not supported by the probe", err)

    # A script that launches its own ranks, as PyTorch Lightning's DDP launcher does: `python
    # train.py` re-runs itself with LOCAL_RANK=1..N-1 (subprocess.Popen, os.environ's copy) and
    # kills the job when a child exits with an error.
    SELF_LAUNCHING = """
        import os, subprocess, sys, time
        import torch, torch.nn as nn
        here = os.path.dirname(os.path.abspath(__file__))
        rank = int(os.environ.get("LOCAL_RANK", "0"))
        if rank > 0:  # another rank: it would train on its own GPU
            with open(os.path.join(here, f"rank{rank}-ran"), "w") as f:
                f.write(os.environ.get("CUDA_VISIBLE_DEVICES", "unset"))
            sys.exit(3)
        children = [subprocess.Popen([sys.executable, os.path.abspath(sys.argv[0])] + sys.argv[1:],
                                     env=dict(os.environ, LOCAL_RANK=str(r))) for r in (1, 2, 3)]
        tool = subprocess.run([sys.executable, "-c", "import os; print(repr(os.environ.get('CUDA_VISIBLE_DEVICES')))"],
                              capture_output=True, text=True, check=True)
        with open(os.path.join(here, "tool-saw"), "w") as f:
            f.write(tool.stdout.strip())
        model = nn.Linear(256, 256).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        while True:
            for c in children:
                assert c.poll() is None, f"a rank exited with {c.returncode}"
            model(torch.randn(32, 256, device="cuda")).sum().backward()
            opt.step()
    """

    def test_ranks_the_script_launches_itself_are_not_run_and_children_see_no_gpu(self):
        rc, text, err, d = run_probe(self.SELF_LAUNCHING, probe_args=["--gpus", "4"])
        self.assertEqual(rc, 0, err)
        # Before: the three ranks ran the script unprobed (and, with the job's CUDA_VISIBLE_DEVICES in
        # os.environ's copy, would have opened real GPUs); one exiting killed the job.
        self.assertEqual([n for n in os.listdir(d) if n.endswith("-ran")], [])
        with open(os.path.join(d, "tool-saw")) as f:
            self.assertEqual(f.read(), "''")  # any other child: no GPU
        self.assertTrue(any(a[0] == 256 * 256 * 4 and a[1] == "load" for a in Trace(text).allocs.values()))  # rank 0's model

    def test_the_stand_in_for_a_rank_ends_with_the_probe(self):
        # The stand-in idles until its parent, the probe, is gone (PR_SET_PDEATHSIG): nothing is
        # left behind when the probe is run directly rather than by colo, which reaps its group.
        probe = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
            import json, subprocess, sys
            from colo_probe import children
            Popen = children.popen_for(sys.argv[1])
            c = Popen([sys.executable, sys.argv[1]])
            print(json.dumps([c.pid, c.args]), flush=True)
            sys.stdin.read()  # until the test closes it
        """), os.path.abspath(__file__)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env=dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), "..", "..", "python")))
        pid, started = json.loads(probe.stdout.readline())
        self.assertIn("signal.pause()", started[2])  # what was started: the stand-in, not this file
        pidfd = os.pidfd_open(pid)  # held before its parent goes: the pid cannot be reused meanwhile
        probe.stdin.close()
        self.assertEqual(probe.wait(timeout=60), 0)
        probe.stdout.close()
        ended = _ends(pidfd, timeout_s=60)
        if not ended:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)  # leave nothing behind a failure
        os.close(pidfd)
        self.assertTrue(ended, f"stand-in {pid} outlived the probe")


if __name__ == "__main__":
    unittest.main()
