"""torch.distributed under --script: the script runs as rank 0 of its job, on GPU 0, and what a
DistributedDataParallel rank keeps on its GPU is recorded.

The process group is the probe's: init_process_group, get_rank / get_world_size, barriers and
collectives (all_reduce, broadcast, all_gather, ...) answer as rank 0 of `world_size` processes
would and move no data (NCCL's own buffers are outside the caching allocator, as the CUDA context
is). Under torchrun (`--torchrun N`) the environment is what torchrun gives rank 0 of N local
processes (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, ...). torch.multiprocessing.spawn (PyTorch's
ImageNet example with --multiprocessing-distributed) runs process 0 in the probe's own process;
torch.multiprocessing.Process given a GPU model (Hogwild: processes sharing one GPU) is refused.

DistributedDataParallel's GPU memory, as PyTorch's (torch/nn/parallel/distributed.py, the c10d
reducer and broadcast_coalesced; the same in 1.13 and 2.x):
- construction broadcasts the parameters and buffers from rank 0 in buckets of up to 250 MiB
  (broadcast_bucket_size), each bucket of more than one tensor flattened into a new buffer, at
  most two in flight;
- the reducer's gradient buckets, one flat buffer per bucket of parameters that need a gradient:
  at construction a single bucket per dtype (find_unused_parameters=False or static_graph, the
  default), or 1 MiB first then bucket_cap_mb (25 MiB) each; at the second iteration's forward
  they are rebuilt in the order the first backward made the gradients ready, 1 MiB first then
  bucket_cap_mb, the old buffers freed first (an explicit bucket_cap_mb: every bucket up to it, as
  PyTorch 2 has it);
- gradients: with gradient_as_bucket_view=False (the default) a parameter's gradient is its own
  tensor beside the bucket (the bucket is extra memory, one more copy of the gradients); with
  True the gradient becomes a view of its bucket as soon as it is ready, and the tensor autograd
  made is freed;
- each forward with broadcast_buffers (the default) broadcasts the buffers (batch-norm
  statistics) the same way: a transient flat copy;
- a forward with device_ids moves CPU inputs to the GPU.
SyncBatchNorm runs its CUDA kernels' shapes (meta_kernels.py) over this process group.
Not modelled: communication hooks (register_comm_hook is accepted; a compressing hook's transient
copies are not recorded). Refused: FSDP (each GPU keeps a shard of the model, not what a DDP rank
keeps)."""
import collections
import contextlib
import copy
import os
import sys

import torch

from . import tensor as pt
from .train import _new_gpu0

BROADCAST_BUCKET_BYTES = 250 << 20  # DistributedDataParallel.broadcast_bucket_size
FIRST_BUCKET_BYTES = 1 << 20        # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES
BUCKET_CAP_MB = 25                  # DistributedDataParallel's bucket_cap_mb default
BROADCASTS_IN_FLIGHT = 2            # c10d broadcast_coalesced's max_in_flight


def bucket_assignment(tensors, limits):
    """c10d's compute_bucket_assignment_by_size: lists of indices into `tensors`, one bucket per
    dtype filling until its bytes reach its limit (limits[0] for each dtype's first bucket, then
    limits[1], ...; the last limit repeats), in order of each bucket's first tensor."""
    open_buckets, next_limit, done = {}, {}, []
    for i, t in enumerate(tensors):
        key = t.dtype
        if key not in open_buckets:
            open_buckets[key] = [[], 0, limits[min(next_limit.get(key, 0), len(limits) - 1)]]
        b = open_buckets[key]
        b[0].append(i)
        b[1] += t.numel() * t.element_size()
        if b[1] >= b[2]:
            done.append(b[0])
            del open_buckets[key]
            next_limit[key] = next_limit.get(key, 0) + 1
    done += [b[0] for b in open_buckets.values() if b[0]]
    return sorted(done, key=min)


def _on_gpu(t):
    return isinstance(t, pt.ProbeTensor)


def broadcast_coalesced(tensors, bucket_bytes=BROADCAST_BUCKET_BYTES):
    """What c10d's broadcast_coalesced allocates on each rank: per bucket of more than one tensor a
    flat copy (torch.cat of the flattened tensors; one tensor is broadcast in place), at most two
    buckets in flight, each freed once the next-but-one starts."""
    gpu = [t for t in tensors if _on_gpu(t)]
    in_flight = collections.deque()
    for bucket in bucket_assignment(gpu, [bucket_bytes]):
        if len(in_flight) >= BROADCASTS_IN_FLIGHT:
            in_flight.popleft()
        if len(bucket) > 1:
            n = sum(gpu[i].numel() for i in bucket)
            in_flight.append(_new_gpu0((n,), gpu[bucket[0]].dtype, "ddp_broadcast"))
    in_flight.clear()


class _Work:
    """What an async_op collective returns: already complete."""

    def wait(self, *args, **kwargs):
        return True

    def is_completed(self):
        return True

    def is_success(self):
        return True

    def result(self):
        return []

    def get_future(self):
        fut = torch.futures.Future()
        fut.set_result([])
        return fut


class ProcessGroup:
    """The job's default process group (or a new_group) as rank 0 sees it."""

    def __init__(self, world_size, backend="nccl"):
        self.world_size = world_size
        self.backend = backend

    def size(self):
        return self.world_size

    def rank(self):
        return 0

    def name(self):
        return self.backend.upper()

    def _get_backend_name(self):  # SyncBatchNorm picks its all-gather by it
        return self.backend


class _GroupNamespace:
    """torch.distributed.group: .WORLD is the default group once it is initialised."""

    def __init__(self, fake):
        self._fake = fake

    @property
    def WORLD(self):  # noqa: N802 - PyTorch's name
        return self._fake.group


_NOT_INITIALIZED = "Default process group has not been initialized, please make sure to call init_process_group."


class FakeDistributed:
    """The torch.distributed functions a training script calls, as rank 0 of the job."""

    def __init__(self, env_world_size=None):
        self.env_world_size = env_world_size  # torchrun's WORLD_SIZE, None without torchrun
        self.group = None

    def _default(self, group=None):
        if self.group is None:
            raise RuntimeError(_NOT_INITIALIZED)
        return group if isinstance(group, ProcessGroup) else self.group

    def init_process_group(self, backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                           group_name="", pg_options=None, device_id=None, **kwargs):
        if self.group is not None:
            raise RuntimeError("trying to initialize the default process group twice!")
        if world_size is None or world_size < 0:
            env = os.environ.get("WORLD_SIZE")
            if env is None:
                raise ValueError("Error initializing torch.distributed using env:// rendezvous: environment "
                                 "variable WORLD_SIZE expected, but not set (a torchrun job: colo estimate --script "
                                 "--nproc-per-node N, or colo submit --probe-script -- torchrun ...)")
            world_size = int(env)
        if rank is None or rank < 0:
            rank = int(os.environ.get("RANK", "0"))
        if world_size < 1:
            raise ValueError(f"init_process_group: world_size {world_size} must be positive")
        if rank != 0:
            # The probe records the GPU of rank 0; another rank would be the same script on another GPU.
            raise RuntimeError(f"init_process_group(rank={rank}): the probe runs rank 0 of the job")
        name = backend.name if hasattr(backend, "name") else (str(backend) if backend else "nccl")
        self.group = ProcessGroup(world_size, name.lower())

    def is_initialized(self):
        return self.group is not None

    def destroy_process_group(self, group=None):
        if group is None or group is self.group:
            self.group = None

    def get_rank(self, group=None):
        self._default(group)
        return 0

    def get_world_size(self, group=None):
        return self._default(group).world_size

    def get_backend(self, group=None):
        return self._default(group).backend

    def new_group(self, ranks=None, *args, **kwargs):
        g = self._default()
        return ProcessGroup(len(ranks) if ranks else g.world_size, g.backend)

    def get_process_group_ranks(self, group=None):
        return list(range(self._default(group).world_size))

    @staticmethod
    def get_default_backend_for_device(device):
        # PyTorch 2.6's mapping (Backend.default_device_backend_map), provided on older ones too:
        # PyTorch's own DDP example picks its backend with it.
        kind = device.type if isinstance(device, torch.device) else torch.device(device).type
        backend = {"cpu": "gloo", "cuda": "nccl"}.get(kind)
        if backend is None:
            raise ValueError(f"Default backend not registered for device : {device}")
        return backend

    def _collective(self, *args, async_op=False, **kwargs):
        self._default(kwargs.get("group"))
        return _Work() if async_op else None

    def _writing(self, *args, async_op=False, **kwargs):
        # A collective that writes what other ranks send (all_gather_into_tensor, reduce_scatter,
        # recv, ...): its tensors' values are unknown from now on (tensor.py, "Values"; the inputs
        # too, which loses nothing but values).
        for a in list(args) + list(kwargs.values()):
            pt.forget_values(a)
        return self._collective(async_op=async_op, group=kwargs.get("group"))

    def all_reduce(self, tensor, op=None, group=None, async_op=False):
        # Every rank is assumed to hold what rank 0 holds: a sum is world_size times it, a mean,
        # minimum or maximum the same (a metric's [count, total] synchronised across processes).
        world = self._default(group).world_size
        if isinstance(tensor, pt.ProbeTensor) and pt.values_known(tensor):
            ops = torch.distributed.ReduceOp
            unchanged = [getattr(ops, k) for k in ("AVG", "MIN", "MAX", "BAND", "BOR") if hasattr(ops, k)]
            if op is None or op == ops.SUM:
                tensor.host.mul_(world)
            elif op == ops.PRODUCT:
                tensor.host.pow_(world)
            elif not any(op == u for u in unchanged):
                pt.forget_values(tensor)  # PREMUL_SUM, BXOR: not worth guessing
        return self._collective(group=group, async_op=async_op)

    def reduce(self, tensor, dst=0, op=None, group=None, async_op=False):
        if dst == 0:  # rank 0 receives the reduction
            return self.all_reduce(tensor, op, group, async_op)
        return self._collective(group=group, async_op=async_op)

    def all_gather(self, tensor_list, tensor, group=None, async_op=False):
        # Every rank's slot gets what rank 0 has (ranks assumed alike). No new memory either way.
        for slot in tensor_list or ():
            slot.copy_(tensor)
        return self._collective(group=group, async_op=async_op)

    def all_gather_object(self, object_list, obj, group=None):
        self._default(group)
        for i in range(len(object_list)):
            object_list[i] = copy.deepcopy(obj) if i else obj

    def gather_object(self, obj, object_gather_list=None, dst=0, group=None):
        self._default(group)
        if object_gather_list is not None:
            for i in range(len(object_gather_list)):
                object_gather_list[i] = copy.deepcopy(obj) if i else obj

    def broadcast_object_list(self, object_list, src=0, group=None, device=None):
        self._default(group)

    def scatter_object_list(self, scatter_object_output_list, scatter_object_input_list=None, src=0, group=None):
        self._default(group)
        if scatter_object_input_list:
            scatter_object_output_list[0] = scatter_object_input_list[0]

    def install(self, patches):
        dist = torch.distributed
        for name in ("init_process_group", "is_initialized", "destroy_process_group", "get_rank", "get_world_size",
                     "get_backend", "new_group", "get_process_group_ranks", "all_gather", "all_gather_object",
                     "gather_object", "broadcast_object_list", "scatter_object_list",
                     "get_default_backend_for_device"):
            patches.set(dist, name, getattr(self, name))
        patches.set(dist, "all_reduce", self.all_reduce)
        patches.set(dist, "reduce", self.reduce)
        # broadcast: every rank ends with the source's values, which rank 0's are assumed to be
        for name in ("barrier", "monitored_barrier", "broadcast", "send", "isend"):
            patches.set(dist, name, self._collective)
        for name in ("all_gather_into_tensor", "_all_gather_base", "reduce_scatter", "reduce_scatter_tensor",
                     "_reduce_scatter_base", "gather", "scatter", "all_to_all", "all_to_all_single", "recv", "irecv"):
            patches.set(dist, name, self._writing)
        # Ranks within the probe's groups are their global ranks (ZeroRedundancyOptimizer maps them).
        c10d = dist.distributed_c10d
        for owner in (dist, c10d):
            for name in ("get_global_rank", "_get_global_rank", "get_group_rank"):
                if hasattr(owner, name):
                    patches.set(owner, name, lambda group, rank: rank)
        patches.set(dist, "group", _GroupNamespace(self))
        patches.set(dist, "is_available", lambda: True)
        patches.set(dist, "is_nccl_available", lambda: True)
        patches.set(dist, "is_torchelastic_launched", lambda: self.env_world_size is not None)
        patches.set(dist, "get_local_rank", lambda: 0)
        ddp = torch.nn.parallel
        patches.set(ddp, "DistributedDataParallel", DistributedDataParallel)
        patches.set(ddp.distributed, "DistributedDataParallel", DistributedDataParallel)
        _refuse_sharding(patches)
        import torch.multiprocessing as mp
        patches.set(mp, "spawn", _spawn_rank0)
        patches.set(mp, "start_processes", _spawn_rank0)
        _refuse_shared_gpu_model(patches)


def _refuse_sharding(patches):
    """FSDP keeps a shard of the model on each GPU, not what a DDP rank keeps: refused by name,
    rather than recorded as something it is not."""
    def refuse(what):
        def init(*args, **kwargs):
            raise NotImplementedError(f"{what} is not supported by the probe (each GPU keeps a shard of the "
                                      "model); estimate the job with --mem")
        return init
    try:
        import torch.distributed.fsdp as fsdp
    except Exception:  # noqa: BLE001 - a PyTorch without FSDP has nothing to refuse
        return
    if hasattr(fsdp, "FullyShardedDataParallel"):
        patches.set(fsdp.FullyShardedDataParallel, "__init__", refuse("FullyShardedDataParallel"))
    if hasattr(fsdp, "fully_shard"):
        patches.set(fsdp, "fully_shard", refuse("fully_shard (FSDP2)"))


def _refuse_shared_gpu_model(patches):
    """Hogwild (PyTorch's mnist_hogwild): processes started with torch.multiprocessing.Process that
    train one GPU model together, each with its own CUDA context, gradients and optimizer state on
    the same GPU. The probe records one process, so such a job is refused by name. share_memory_()
    of a GPU tensor is a no-op, as CUDA's is (its memory is shared through CUDA IPC)."""
    share = torch.Tensor.share_memory_
    patches.set(torch.Tensor, "share_memory_", lambda self: self if _on_gpu(self) else share(self))
    import multiprocessing.process as mp_process
    start = mp_process.BaseProcess.start

    def holds_gpu_tensors(x):
        if isinstance(x, torch.nn.Module):
            return any(_on_gpu(t) for t in x.parameters()) or any(_on_gpu(t) for t in x.buffers())
        return _on_gpu(x)

    def checked_start(self):
        # A DataLoader's workers pass datasets, not GPU tensors: they start as before.
        args = list(getattr(self, "_args", ())) + list(getattr(self, "_kwargs", {}).values())
        if any(holds_gpu_tensors(a) for a in args):
            raise NotImplementedError("processes that train one GPU model together (torch.multiprocessing.Process "
                                      "with GPU tensors, Hogwild) are not supported by the probe (it records one "
                                      "process); estimate the job with --mem")
        return start(self)
    patches.set(mp_process.BaseProcess, "start", checked_start)


def _spawn_rank0(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """torch.multiprocessing.spawn: process 0 of `nprocs`, in this process (it uses GPU 0)."""
    fn(0, *args)
    return None


class DistributedDataParallel(torch.nn.Module):
    """torch.nn.parallel.DistributedDataParallel on rank 0: the wrapped module's forward, with the
    GPU memory the real wrapper keeps (module docstring)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, **kwargs):
        super().__init__()
        dist = torch.distributed
        if process_group is None and not dist.is_initialized():
            raise RuntimeError(_NOT_INITIALIZED)
        self.module = module
        self.device_ids = list(device_ids) if device_ids else None
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb) * (1 << 20))
        # PyTorch 2 makes the first bucket small only at the default cap; an explicit bucket_cap_mb is
        # every bucket's limit (PyTorch 1.13 kept 1 MiB first either way).
        self._limits = ([FIRST_BUCKET_BYTES, self.bucket_bytes_cap] if bucket_cap_mb is None
                        else [self.bucket_bytes_cap])
        ignore = set(getattr(module, "_ddp_params_and_buffers_to_ignore", ()))
        seen, params = set(), []
        for name, p in module.named_parameters():
            if p.requires_grad and name not in ignore and id(p) not in seen:
                seen.add(id(p))
                params.append(p)
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        self._params = params
        self._buffers_synced = [b for n, b in module.named_buffers() if n not in ignore]
        self._on_gpu = _on_gpu(params[0])
        self._buckets = []
        self._views = {}
        self._ready, self._ready_seen = [], set()  # parameter indices in the order their gradients were ready
        self._rebuilt = False
        self._sync_backward = False
        self._accumulators = []
        if not self._on_gpu:
            return  # a CPU module (gloo): nothing of it on the GPU
        with torch.no_grad():
            broadcast_coalesced([p.detach() for n, p in module.named_parameters() if n not in ignore] +
                                list(self._buffers_synced))
            one_bucket = static_graph or not find_unused_parameters
            limits = [sys.maxsize] if one_bucket else self._limits
            self._allocate(list(reversed(bucket_assignment(params, limits))))
        with torch.enable_grad():
            for i, p in enumerate(params):
                # The reducer's hook runs after the parameter's gradient accumulator, as PyTorch's does.
                acc = p.expand_as(p).grad_fn.next_functions[0][0]
                acc.register_hook(self._hook(i))
                self._accumulators.append(acc)  # the accumulator lives as long as the hook must

    def _allocate(self, buckets):
        """One flat buffer per bucket, in the reducer's order; each parameter's view into it."""
        self._buckets, self._views = [], {}
        for bucket in buckets:
            n = sum(self._params[i].numel() for i in bucket)
            flat = _new_gpu0((n,), self._params[bucket[0]].dtype, "ddp_bucket")
            self._buckets.append(flat)
            offset = 0
            for i in bucket:
                p = self._params[i]
                self._views[i] = flat[offset:offset + p.numel()].view(p.shape)
                offset += p.numel()
                if self.gradient_as_bucket_view and p.grad is not None:
                    self._views[i].copy_(p.grad)
                    p.grad = self._views[i]

    def _hook(self, i):
        def hook(grad_inputs, grad_outputs):
            if not self._sync_backward:
                return
            if not self._rebuilt and i not in self._ready_seen:
                self._ready.append(i)
                self._ready_seen.add(i)
            p = self._params[i]
            view = self._views.get(i)
            if view is None or p.grad is None:
                return
            with torch.no_grad():
                if p.grad.storage_token is not view.storage_token:
                    view.copy_(p.grad)  # the reducer's copy (scaled by 1 / world size) into the bucket
                    if self.gradient_as_bucket_view:
                        p.grad = view  # the gradient autograd made is freed
        return hook

    def _rebuild(self):
        """The reducer's bucket rebuild at the second iteration: the old buckets go first (buckets_
        cleared), then new ones in the order the gradients became ready."""
        self._rebuilt = True
        order = self._ready + [i for i in range(len(self._params)) if i not in self._ready_seen]
        in_order = [self._params[i] for i in order]
        buckets = [[order[j] for j in b] for b in
                   bucket_assignment(in_order, self._limits)]
        with torch.no_grad():
            self._allocate(buckets)

    def forward(self, *inputs, **kwargs):
        sync = torch.is_grad_enabled() and self.require_backward_grad_sync
        if self._on_gpu and sync and not self._rebuilt and self._ready and (
                self.static_graph or not self.find_unused_parameters):
            self._rebuild()
        if self._on_gpu and self.require_forward_param_sync and self.broadcast_buffers and self._buffers_synced:
            with torch.no_grad():
                broadcast_coalesced(self._buffers_synced)
        if self.device_ids:
            inputs, kwargs = _to_gpu(inputs), _to_gpu(kwargs)
        self._sync_backward = sync
        self.require_forward_param_sync = sync
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def join(self, *args, **kwargs):
        return contextlib.nullcontext()

    def register_comm_hook(self, state, hook):
        self.comm_hook = hook

    def _set_static_graph(self):
        self.static_graph = True


def _to_gpu(obj):
    if isinstance(obj, torch.Tensor):
        return obj if _on_gpu(obj) else obj.to("cuda")
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_to_gpu(v) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_gpu(v) for v in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _to_gpu(v)) for k, v in obj.items())
    return obj


TORCHRUN_ENV = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK", "ROLE_NAME",
                "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT",
                "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID", "GROUP_WORLD_SIZE")


@contextlib.contextmanager
def torchrun_environment(nproc):
    """The environment torchrun gives local rank 0 of `nproc` processes on one node; None: the
    environment is left as it is."""
    if nproc is None:
        yield
        return
    saved = {k: os.environ.get(k) for k in TORCHRUN_ENV}
    os.environ.update({"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": str(nproc), "LOCAL_WORLD_SIZE": str(nproc),
                       "GROUP_RANK": "0", "GROUP_WORLD_SIZE": "1", "ROLE_RANK": "0", "ROLE_NAME": "default",
                       "ROLE_WORLD_SIZE": str(nproc), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500",
                       "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "0",
                       "TORCHELASTIC_RUN_ID": "colo-probe"})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
