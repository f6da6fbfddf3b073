"""torch.load under the probe (--script): a checkpoint's tensors go where PyTorch would put them.

A job that resumes (`torch.load(path, map_location="cuda")`, or a checkpoint saved on a GPU loaded
without map_location) holds the checkpoint's weights and optimizer state on the GPU beside the
model's own until they are dropped: a transient of up to the whole training state, and a common
cause of an out-of-memory at resume. On the probe's CPU-only PyTorch the load itself failed ("Storage
device not recognized: cuda"). Here the real torch.load reads the file onto the host, asking each
storage's destination as PyTorch's own map_location rules give it (None: where it was saved; a
string or device; a dict of locations; a callable); each storage bound for a GPU becomes one probe
storage (one allocation, recorded as `torch.load`), its tensors views of it, so tensors sharing a
storage in the file (tied weights saved once) share it on the probe's GPU too."""
import contextlib

import torch

from . import factories
from . import tensor as pt

_OP = "torch.load"


def _gpu_bound(location, map_location, storage):
    """Whether PyTorch would restore `storage`, saved at `location` ('cpu', 'cuda:1'), on a GPU."""
    if map_location is None:
        where = location
    elif isinstance(map_location, (str, torch.device)):
        where = str(map_location)
    elif isinstance(map_location, dict):
        where = map_location.get(location, location)
    elif callable(map_location):
        try:
            result = map_location(storage, location)
        except (RuntimeError, AssertionError, AttributeError):
            return True  # `storage.cuda(...)`, which this CPU-only PyTorch refuses: a GPU on the target
        where = location if result is None else str(result.device)
    else:
        raise TypeError(f"torch.load: map_location must be a str, torch.device, dict or callable, not "
                        f"{type(map_location).__name__}")
    device = torch.device(where)
    if device.type != "cuda":
        return False  # the host ('meta' too: no memory anywhere)
    index = 0 if device.index is None else device.index
    if index >= factories.TARGET_GPUS[0]:
        # PyTorch's own refusal, with the target's GPU count
        raise RuntimeError(f"Attempting to deserialize object on CUDA device {index} but "
                           f"torch.cuda.device_count() is {factories.TARGET_GPUS[0]}. Please use torch.load "
                           "with map_location to map your storages to an existing device.")
    if index != 0:
        raise NotImplementedError(f"torch.load onto cuda:{index} (another GPU than the job's first) is not "
                                  "supported: the probe records GPU 0 only; map_location='cuda:0' loads it there")
    return True


def _storage_key(t):
    storage = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return storage.data_ptr(), storage.nbytes()


class _Mover:
    """Host tensors of storages bound for the GPU -> probe tensors, one probe storage per host one."""

    def __init__(self, gpu):
        self.gpu = gpu        # data_ptr of host storages bound for the GPU
        self.bases = {}       # data_ptr -> the probe tensor spanning the whole storage
        self.memo = {}        # id(object) -> its moved self (shared references stay shared)

    def tensor(self, t):
        if isinstance(t, pt.ProbeTensor) or t.device.type != "cpu" or t.layout != torch.strided:
            return t
        ptr, nbytes = _storage_key(t)
        if ptr not in self.gpu or nbytes == 0:
            return t
        base = self.bases.get(ptr)
        if base is None:
            # The whole storage, as PyTorch copies it to the GPU: one allocation of its size.
            whole = torch.as_strided(t.detach(), (nbytes // t.element_size(),), (1,), 0)
            base = self.bases[ptr] = pt.wrap_new(whole, _OP)
        with torch.no_grad():
            flat = base if base.dtype == t.dtype else base.view(t.dtype)
            moved = flat.as_strided(t.size(), t.stride(), t.storage_offset())
        if isinstance(t, torch.nn.Parameter):
            return torch.nn.Parameter(moved, t.requires_grad)
        return moved.requires_grad_(t.requires_grad) if t.requires_grad else moved

    def __call__(self, obj):
        if id(obj) in self.memo:
            return self.memo[id(obj)]
        if isinstance(obj, torch.Tensor):
            out = self.tensor(obj)
        elif isinstance(obj, dict):  # in place: a state_dict's type and its _metadata stay
            self.memo[id(obj)] = obj
            for k, v in list(obj.items()):
                obj[k] = self(v)
            return obj
        elif isinstance(obj, list):
            self.memo[id(obj)] = obj
            obj[:] = [self(v) for v in obj]
            return obj
        elif isinstance(obj, tuple):
            items = [self(v) for v in obj]
            out = type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
        elif isinstance(obj, torch.nn.Module):  # torch.save(model): its parameters and buffers
            self.memo[id(obj)] = obj
            for m in obj.modules():
                for table in (m._parameters, m._buffers):
                    for k, v in table.items():
                        if v is not None:
                            table[k] = self(v)
            return obj
        else:
            return obj
        self.memo[id(obj)] = out
        return out


def _outside_probe_device():
    """The probe's device mode set aside while the moves run, as it is within an operator's own
    handling: under it, every plain meta tensor made (a probe tensor's meta twin) becomes a probe
    tensor itself."""
    depth = torch.overrides._len_torch_function_stack()
    if depth and isinstance(torch._C._get_function_stack_at(depth - 1), factories.ProbeDevice):
        return torch.overrides._pop_mode_temporarily()
    return contextlib.nullcontext()


def install(p):
    real = torch.load

    def load(f, map_location=None, *args, **kwargs):
        gpu = set()

        def restore(storage, location):
            if _gpu_bound(location, map_location, storage):
                gpu.add(storage.data_ptr())
            return storage  # read onto the host; moved below
        obj = real(f, restore, *args, **kwargs)
        with _outside_probe_device():
            return _Mover(gpu)(obj)
    p.set(torch, "load", load)

