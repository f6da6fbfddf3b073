"""ProbeTensor: a meta tensor wrapped in a subclass, so every operator reaches __torch_dispatch__
below autograd (what would really run on the GPU), and every storage has a token whose lifetime is
the storage's: views, in-place results and autograd's saved copies (detach) share their source's
token; everything else an operator returns is a fresh storage = one allocation in the trace.

Values (--script mode, KEEP_VALUES): a probe tensor has none, except a small one made from host
data (a batch's labels moved to the GPU, torch.tensor([count, total], device="cuda"), a small
factory) and what operators compute from such tensors alone: it keeps a host copy (`host`), computed on the CPU beside the meta run, so
reading it (`.item()`, `.tolist()`, `bool(t)`) gives what the GPU would. Everything else read back
gets assumed values (_materialise_cpu)."""
import copy
import math

import torch
from torch.utils._mode_utils import no_dispatch
from torch.utils._pytree import tree_map, tree_flatten

from . import meta_kernels
from .conv_shape import conv_key

RECORDER = None  # the active TraceWriter (set by run_probe), None once recording has ended

_CONV_OPS = {"aten::convolution", "aten::convolution_backward", "aten::_convolution"}
_MATMUL_OPS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addmv", "aten::mv",
               "aten::_addmm_activation", "aten::addbmm"}
CPU_FALLBACKS = {}  # op name -> count: operators that had no meta kernel and ran on the CPU


class Storage:
    """One GPU storage. Its destruction (last ProbeTensor sharing it gone) is the free, recorded in
    the trace it was allocated in: a storage kept alive by a reference cycle can be collected while
    a later probe in the same process records (colo_probe.gpumemnet probes many rows in one), and
    its free is not that trace's."""
    __slots__ = ("ident", "nbytes", "recorder", "values_known", "values_assumed", "address", "__weakref__")

    def __init__(self, nbytes, op):
        self.nbytes = nbytes
        # False once something the probe cannot compute wrote into it: every view's host copy is stale.
        self.values_known = True
        # Its values follow from an assumption (_assumed_finite), not from the script's data: a host
        # read of them counts in the footer's value_reads, as a read of unknown values does.
        self.values_assumed = False
        self.recorder = RECORDER
        self.ident = RECORDER.malloc(nbytes, op) if RECORDER is not None else 0
        self.address = _device_address(nbytes)

    def __del__(self):
        if RECORDER is not None and self.ident and self.recorder is RECORDER:
            RECORDER.free(self.ident, self.nbytes)

    def grow(self, nbytes, op):
        """A resize past the storage's size: CUDA allocates the larger block, copies, frees the old
        one; every tensor sharing the storage sees the new block."""
        if RECORDER is not None:
            ident = RECORDER.malloc(nbytes, op)
            if self.ident and self.recorder is RECORDER:
                RECORDER.free(self.ident, self.nbytes)
            self.ident, self.recorder = ident, RECORDER
        self.nbytes = nbytes
        self.address = _device_address(nbytes)


_NEXT_ADDRESS = [0x7F0000000000]  # where CUDA's allocations typically lie in a process' address space


def _device_address(nbytes):
    """A distinct GPU address for a new storage (CUDA's 512-byte alignment; empty storages are null,
    as CUDA's). Scripts read data_ptr() to find shared or tied parameters (a common dedup is
    `{p.data_ptr(): p for p in params}`); a meta tensor's is 0 for every storage, and such a script
    would then optimise a single parameter. Addresses are never reused: two live storages differ."""
    if nbytes <= 0:
        return 0
    address = _NEXT_ADDRESS[0]
    _NEXT_ADDRESS[0] += (nbytes + 511) // 512 * 512
    return address


def storage_bytes(t):
    """Bytes of the storage a fresh tensor needs: its furthest element + 1, times the element size."""
    if t.numel() == 0:
        return 0
    span = 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride()) if s > 0)
    return (t.storage_offset() + span) * t.element_size()


_DATA = torch.Tensor.data  # the C base's descriptor (its class is renamed across PyTorch versions)


class ProbeTensor(torch.Tensor):
    __slots__ = ("elem", "storage_token", "host")

    @staticmethod
    def __new__(cls, elem, token, requires_grad=False, host=None):
        def make():
            return torch.Tensor._make_wrapper_subclass(
                cls, elem.size(), strides=elem.stride(), storage_offset=elem.storage_offset(),
                dtype=elem.dtype, layout=elem.layout, device=elem.device, requires_grad=requires_grad)
        if torch.is_inference_mode_enabled():
            # A wrapper made in inference mode would be an inference tensor, and a view of a normal
            # tensor taken there (an accuracy metric's target[None]) could not share its base's
            # version counter: PyTorch's own view is a normal tensor.
            with torch.inference_mode(False):
                r = make()
        else:
            r = make()
        r.elem = elem
        r.storage_token = token
        r.host = host
        return r

    def __repr__(self):
        return f"ProbeTensor({tuple(self.shape)}, {self.dtype})"

    def data_ptr(self):
        # The storage's GPU address (_device_address) plus the view's offset, so that views and
        # tied parameters share an address and separate storages never do.
        token = self.storage_token
        if token is None or not token.address:
            return 0
        return token.address + self.storage_offset() * self.element_size()

    def __format__(self, format_spec):
        # f"{loss:.3f}" on a 0-d GPU tensor: PyTorch formats its .item(), a host read (assumed
        # value, counted). Its own check (`type(self) is Tensor`, not meta) turns subclasses away.
        if self.dim() == 0:
            return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    __torch_function__ = torch._C._disabled_torch_function_impl

    # `param.data = new` (Module._apply for .half(), .double(), .to(dtype) on a module already on
    # the GPU) swaps the wrapper's metadata in C++; the meta tensor inside and the storage token must
    # follow, or the wrapper says float16 while its operators run on the old float32 tensor, and the
    # old storage would stay alive in the trace.
    def _set_data(self, new):
        _DATA.__set__(self, new)
        if isinstance(new, ProbeTensor):
            self.elem = new.elem
            self.storage_token = new.storage_token
            self.host = new.host

    data = property(lambda self: _DATA.__get__(self), _set_data)

    def __deepcopy__(self, memo):
        # copy.deepcopy(model) (EMA models, AveragedModel): a storage of its own, as on the GPU.
        # Tensor.__deepcopy__ would copy the slots too, giving the copy the original's storage token.
        if id(self) in memo:
            return memo[id(self)]
        with torch.no_grad():
            new = self.clone()
        memo[id(self)] = new
        if self.requires_grad:
            new.requires_grad_(True)
        if self.grad is not None:
            new.grad = copy.deepcopy(self.grad, memo)
        new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        schema = func._schema
        name = schema.name
        if name in ("aten::_to_copy", "aten::to") and _to_cpu(kwargs):
            # .cpu() / .item(): a host copy, not GPU memory. Its value is meaningless on meta. A copy
            # that also converts (`.to("cpu", torch.uint8)`, as image savers do) has the new dtype.
            host = tree_map(_materialise_cpu, args[0])
            dtype = kwargs.get("dtype")
            return host.to(dtype) if dtype is not None and isinstance(host, torch.Tensor) else host
        if name in ("aten::_local_scalar_dense", "aten::is_nonzero", "aten::item") and isinstance(args[0], ProbeTensor):
            # bool(t), t.item(), `if t:`: the same assumed values as a host copy.
            return _materialise_cpu(args[0]).reshape(-1)[0].item() if args[0].numel() else False
        uargs = tree_map(_unwrap, args)
        ukwargs = tree_map(_unwrap, kwargs)
        if name in meta_kernels.ARGUMENT_FIXES:
            uargs, ukwargs = meta_kernels.ARGUMENT_FIXES[name](uargs, ukwargs)
        scratch = after = None
        if name in meta_kernels.SCRATCH:
            held, after = meta_kernels.SCRATCH[name](uargs)
            scratch = [Storage(n, name[6:]) for n in held]
        try:
            if name.startswith("aten::_foreach_"):  # 1.13 has no meta kernels for them
                out = meta_kernels.foreach(schema, uargs)
            elif name == "aten::set_" and len(uargs) == 2 and isinstance(uargs[1], torch.Tensor):
                # t.set_(source): t takes source's metadata and storage, done here directly (under
                # --script the meta kernel returned another wrapper, not t, and t kept its shape)
                _DATA.__set__(uargs[0], uargs[1])
                out = uargs[0]
            elif name in meta_kernels.PROBE_KERNELS:
                out = meta_kernels.PROBE_KERNELS[name](*uargs, **ukwargs)
            elif name in meta_kernels.CTC:  # shapes from the lengths' values, which a meta kernel lacks
                kernel, at = meta_kernels.CTC[name]
                out = kernel(uargs, host_ints(args[at]), host_ints(args[at + 1]))
            else:
                try:
                    out = func(*uargs, **ukwargs)
                except RuntimeError:
                    mixed = cpu_beside_meta(uargs, ukwargs)
                    if mixed is None:
                        if name in meta_kernels.DATA_DEPENDENT:  # repeat_interleave's meta kernel refuses
                            raise NotImplementedError(name) from None
                        raise
                    uargs, ukwargs = mixed
                    out = func(*uargs, **ukwargs)
        except NotImplementedError:
            out = hosts = None
            if name in meta_kernels.DATA_DEPENDENT:  # the output's size follows the values, where known
                hosts = _host_run(func, args, kwargs, None)
                if hosts is not None:
                    out = tree_map(_meta_of, hosts)
            if out is None:
                out = meta_kernels.cpu_fallback(func, uargs, ukwargs, _known_values(args, kwargs))
            CPU_FALLBACKS[name] = CPU_FALLBACKS.get(name, 0) + 1
        else:
            hosts = None
        assumed = False
        if hosts is None:
            hosts = _host_run(func, args, kwargs, out)
            assumed = hosts is not None and _any_assumed(args, kwargs)
        if hosts is None and KEEP_VALUES[0]:
            hosts = _assumed_finite(func, args, out)
            assumed = hosts is not None
        if hosts is None and KEEP_VALUES[0]:
            for written in _written(schema, args, kwargs):
                forget_values(written)
        if name in _METADATA_INPLACE and isinstance(args[0], ProbeTensor):
            # squeeze_, t_, ...: the operator changed the inner tensor's shape and strides; the
            # wrapper autograd sees must change alike (its meta kernel does that, no memory moves).
            with no_dispatch():
                func(*args, **kwargs)
        if RECORDER is not None:
            if name in _CONV_OPS:
                _hint_conv(name, args, kwargs, out)
            elif name in _MATMUL_OPS:
                RECORDER.matmul(name[6:])
        _current_op[0] = name[6:] if name.startswith("aten::") else name
        if name in _BATCH_NORM_OPS and isinstance(uargs[0], torch.Tensor) and uargs[0].dim() >= 3:
            # CUDA runs batch norm on >= 3-D inputs through cuDNN (which loads cuDNN: a larger context);
            # 2-D inputs (BatchNorm1d on features) take PyTorch's own kernel.
            _current_op[0] = _BATCH_NORM_OPS[name]
        if name == "aten::set_" and len(args) > 1 and isinstance(args[1], ProbeTensor):
            args[0].storage_token = args[1].storage_token  # t.set_(source): the source's storage, shared
        result = _wrap_outputs(func, schema, args, kwargs, out)
        if hosts is not None:
            _attach_hosts(result, hosts)
            if assumed:
                _mark_assumed(result)
        if after:
            temporaries = [Storage(n, name[6:]) for n in after]
            del temporaries
        del scratch
        return result


_METADATA_INPLACE = {"aten::squeeze_", "aten::unsqueeze_", "aten::t_", "aten::transpose_", "aten::swapdims_",
                     "aten::swapaxes_", "aten::as_strided_"}

_BATCH_NORM_OPS = {"aten::native_batch_norm": "cudnn_batch_norm",
                   "aten::native_batch_norm_backward": "cudnn_batch_norm_backward"}


def cpu_beside_meta(args, kwargs):
    """(args, kwargs) with their CPU tensors on the meta device, for an operator that refused a CPU
    tensor beside a meta one; None when there is none (factories.MetaInit uses it too). Such a mix
    comes from model construction, which puts a module's plain tensor attributes on the meta device
    (SSD's default-box sizes), where on the GPU they and what the forward makes from them stay on
    the host. PyTorch 1.13's meta kernels accept the mix; PyTorch 2's Python ones (torch._refs.cat)
    check the devices."""
    flat, _ = tree_flatten((args, kwargs))
    if not any(isinstance(x, torch.Tensor) and x.device.type == "cpu" and x.dim() > 0 for x in flat):
        return None

    def to_meta(x):
        return x.to("meta") if isinstance(x, torch.Tensor) and x.device.type == "cpu" and x.dim() > 0 else x
    return tree_map(to_meta, args), tree_map(to_meta, kwargs)


def host_ints(x):
    """An int[] argument, or a tensor of ints whose values the host has (a CPU tensor, a probe
    tensor with known values), as a list; None when unknown."""
    if isinstance(x, (list, tuple)):
        return [int(v) for v in x]
    if isinstance(x, ProbeTensor):
        return x.host.reshape(-1).tolist() if values_known(x) else None
    if isinstance(x, torch.Tensor) and x.device.type == "cpu":
        return x.reshape(-1).tolist()
    return None


def _to_cpu(kwargs):
    dev = kwargs.get("device")
    return dev is not None and torch.device(dev).type == "cpu"


HOST_NUMEL = 1 << 16  # the largest probe tensor that keeps a host copy of its values (elements)
# Whether probe tensors keep values at all: in --script mode, where the user's code reads them back.
# The probe's own training step (--probe MODEL, bulk GPUMemNet rows) never does, and runs faster without.
KEEP_VALUES = [False]


def values_known(x):
    """Whether a probe tensor's host copy holds the values the GPU would."""
    return x.host is not None and getattr(x.storage_token, "values_known", False)


def _known_values(args, kwargs):
    """{id(inner meta tensor): host copy} for the probe tensors among the arguments whose values
    are known, for the CPU fallback of an operator whose other arguments' values are not."""
    flat, _ = tree_flatten((args, kwargs))
    return {id(x.elem): x.host for x in flat if isinstance(x, ProbeTensor) and values_known(x)}


def _meta_of(x):
    return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta") if isinstance(x, torch.Tensor) else x


def set_values(t, host):
    """Gives a probe tensor the values `host` (same shape and dtype): the host tensor it was copied
    from, values the caller computed, or an outcome the probe assumes, where the caller documents
    which and why (detection.py)."""
    t.host = host
    if isinstance(t.storage_token, Storage):
        t.storage_token.values_known = True
        t.storage_token.values_assumed = False


def forget_values(x):
    """Something the probe does not compute wrote into x (a tensor or a list of them)."""
    for t in (x if isinstance(x, (list, tuple)) else (x,)):
        if isinstance(t, ProbeTensor):
            t.host = None
            if isinstance(t.storage_token, Storage):
                t.storage_token.values_known = False


def _written(schema, args, kwargs):
    return [v for a, v in _bound_arguments(schema, args, kwargs) if a.alias_info is not None and a.alias_info.is_write]


def _host_run(func, args, kwargs, out):
    """func on the host copies, when every tensor argument is a probe tensor with known values and
    the result is small: what the GPU computes. In-place operators update the host copies in place
    (views' copies are views: they follow). None when it cannot run so."""
    if not KEEP_VALUES[0]:
        return None
    flat, _ = tree_flatten((args, kwargs))
    probes = 0
    for x in flat:
        if isinstance(x, ProbeTensor):
            if not values_known(x):
                return None
            probes += 1
        elif isinstance(x, torch.Tensor) and x.device.type != "cpu":
            return None
    if not probes:
        return None
    oflat, _ = tree_flatten(out)
    if sum(o.numel() for o in oflat if isinstance(o, torch.Tensor)) > HOST_NUMEL:
        return None

    def host(x):
        if isinstance(x, ProbeTensor):
            return x.host
        if isinstance(x, torch.device) and x.type == "meta":
            return torch.device("cpu")
        return x
    hkwargs = {k: ("cpu" if k == "device" and v is not None else tree_map(host, v)) for k, v in kwargs.items()}
    try:
        return func(*tree_map(host, args), **hkwargs)
    except Exception:  # noqa: BLE001 - an operator without a CPU kernel: the values stay unknown
        return None


# What a test of finiteness answers for unknown floating values (an operator on 1.13 and 2.x, or
# the comparisons 1.13's isfinite is made of): the probe records a healthy run, whose values are
# finite. A host read of an unknown boolean would otherwise read True, and `if torch.isnan(loss):
# continue` skip every step, clip_grad_norm_(error_if_nonfinite=True) raise.
_FINITENESS = {"aten::isnan": False, "aten::isinf": False, "aten::isposinf": False, "aten::isneginf": False,
               "aten::isfinite": True}


def _assumed_finite(func, args, out):
    """The host values of a finiteness test of a probe tensor whose values are unknown: all False
    for isnan/isinf, all True for isfinite, and likewise `x == x`, `x != inf`; None for anything else."""
    if not (isinstance(out, torch.Tensor) and out.dtype == torch.bool
            and args and isinstance(args[0], ProbeTensor) and args[0].is_floating_point()):
        return None
    name = func._schema.name
    if name in _FINITENESS:
        value = _FINITENESS[name]
    elif name in ("aten::eq", "aten::ne") and len(args) == 2:
        other = args[1]
        if other is args[0]:  # x == x is False only for NaN
            value = name == "aten::eq"
        elif isinstance(other, float) and not math.isfinite(other):  # x == inf, x != nan
            value = name == "aten::ne"
        else:
            return None
    else:
        return None
    return torch.tensor(value).expand(out.shape)  # one element, whatever the size: `isnan(logits).any()`


def _any_assumed(args, kwargs):
    flat, _ = tree_flatten((args, kwargs))
    return any(isinstance(x, ProbeTensor) and getattr(x.storage_token, "values_assumed", False) for x in flat)


def _mark_assumed(result):
    for r in (result if isinstance(result, (list, tuple)) else (result,)):
        if isinstance(r, ProbeTensor) and isinstance(r.storage_token, Storage):
            r.storage_token.values_assumed = True


def _attach_hosts(result, hosts):
    if isinstance(result, ProbeTensor):
        if result.host is hosts:
            return  # in place: its host copy was updated
        ok = isinstance(hosts, torch.Tensor) and hosts.shape == result.shape and hosts.dtype == result.dtype
        result.host = hosts if ok else None
    elif isinstance(result, (list, tuple)):
        same = isinstance(hosts, (list, tuple)) and len(hosts) == len(result)
        for i, r in enumerate(result):
            _attach_hosts(r, hosts[i] if same else None)


def _materialise_cpu(x):
    # A host read: a probe tensor made from host values answers with them (values_known). Any other
    # gets assumed values: booleans read True (the checks training loops make - isfinite(loss),
    # all() of a mask - pass, so the usual path is recorded), numbers 0. docs/ESTIMATION.md lists
    # what this cannot cover.
    if isinstance(x, ProbeTensor):
        if values_known(x):
            if getattr(x.storage_token, "values_assumed", False):
                VALUE_READS[0] += 1
            return x.host.clone()
        VALUE_READS[0] += 1
        return torch.ones(x.shape, dtype=x.dtype) if x.dtype == torch.bool else torch.zeros(x.shape, dtype=x.dtype)
    return x


VALUE_READS = [0]  # host reads of probe tensors' values (assumed, not known), for the trace footer


def _tolist(self):
    # t.tolist(): a host read like .item() (torch refuses tolist on tensor subclasses).
    return _materialise_cpu(self).tolist()


def _unwrap(x):
    return x.elem if isinstance(x, ProbeTensor) else x


def _bound_arguments(schema, args, kwargs):
    """(argument schema, value) pairs, positional and keyword."""
    pairs = list(zip(schema.arguments, args))
    by_name = {a.name: a for a in schema.arguments}
    pairs += [(by_name[k], v) for k, v in kwargs.items() if k in by_name]
    return pairs


def _token_of(value):
    if isinstance(value, ProbeTensor):
        return value.storage_token
    if isinstance(value, (list, tuple)):
        for v in value:
            if isinstance(v, ProbeTensor):
                return v.storage_token
    return None


_UNANNOTATED_VIEWS = frozenset(("aten::_unsafe_view", "aten::unsafe_split", "aten::unsafe_split_with_sizes",
                                "aten::unsafe_chunk"))


def _wrap_outputs(func, schema, args, kwargs, out):
    if schema.name in _UNANNOTATED_VIEWS and isinstance(args[0], ProbeTensor) and not schema.overload_name.endswith("out"):
        # Views of their input, though their schemas declare no alias (autograd is to treat the
        # results as fresh tensors): matmul hands back its folded product through _unsafe_view, an
        # LSTM or GRU cell splits its gates with unsafe_chunk. No memory of their own.
        token = args[0].storage_token
        if isinstance(out, torch.Tensor):
            return ProbeTensor(out, token)
        return type(out)(ProbeTensor(t, token) if isinstance(t, torch.Tensor) else t for t in out)
    aliased = [r.alias_info for r in schema.returns]
    if not any(a is not None for a in aliased):
        return tree_map(_fresh, out)
    pairs = _bound_arguments(schema, args, kwargs)

    def source(alias):
        for a, v in pairs:
            if a.alias_info is not None and set(a.alias_info.before_set) & set(alias.before_set):
                return v
        if not alias.before_set:
            # Tensor(a)[] (unbind, split, chunk: iterating a tensor): the schema exposes no alias
            # set for the list's elements; they are views of the aliasing argument.
            return next((v for a, v in pairs if a.alias_info is not None), None)
        return None

    single = len(schema.returns) == 1
    outs = (out,) if single else out
    res = []
    for o, alias in zip(outs, aliased):
        if alias is None:
            res.append(tree_map(_fresh, o))
            continue
        src = source(alias)
        token = _token_of(src)
        if isinstance(o, torch.Tensor):
            if isinstance(src, ProbeTensor) and src.elem is o:
                res.append(_follow_resize(src))  # in-place: the very same tensor
            else:
                res.append(ProbeTensor(o, token))
        elif isinstance(o, (list, tuple)):
            srcs = src if isinstance(src, (list, tuple)) else None
            items = []
            for i, t in enumerate(o):
                if srcs is not None and i < len(srcs) and isinstance(srcs[i], ProbeTensor) and srcs[i].elem is t:
                    items.append(_follow_resize(srcs[i]))
                elif isinstance(t, torch.Tensor):
                    items.append(ProbeTensor(t, _token_of(srcs[i]) if srcs and i < len(srcs) else token))
                else:
                    items.append(t)
            res.append(type(o)(items))
        else:
            res.append(o)
    return res[0] if single else tuple(res)


def _follow_resize(t):
    """t, written in place: where the operator changed its shape (resize_, resize_as_, an out=
    argument of another size, set_), the wrapper takes its inner tensor's metadata, as on the GPU,
    and a storage that must grow grows (Storage.grow). Before, the wrapper kept its old shape and
    the larger storage was never recorded (Rprop's `grad.new().resize_as_(grad)` state: 0 bytes)."""
    inner = t.elem
    if inner.shape == t.shape and inner.stride() == t.stride() and inner.storage_offset() == t.storage_offset():
        return t
    token = t.storage_token
    need = storage_bytes(inner)
    if isinstance(token, Storage) and need > token.nbytes:
        token.grow(need, _current_op[0])
    _DATA.__set__(t, ProbeTensor(inner, token))  # `t.data = ...`: t's metadata, t's identity
    return t


_current_op = ["?"]


def current_op_name():
    return _current_op[0]


def set_op_name(name):
    _current_op[0] = name


def _fresh(x):
    if isinstance(x, torch.Tensor) and not isinstance(x, ProbeTensor) and x.device.type == "meta":
        return ProbeTensor(x, Storage(storage_bytes(x), _current_op[0]))
    return x


def _hint_conv(name, args, kwargs, out):
    pairs = dict((a.name, v) for a, v in _bound_arguments(_SCHEMAS[name], args, kwargs)) if name in _SCHEMAS else {}
    inp = pairs.get("input")
    stride = pairs.get("stride") or [1]
    if not isinstance(inp, torch.Tensor):
        return
    in_bytes = inp.numel() * inp.element_size()
    if name == "aten::convolution_backward":
        g = pairs.get("grad_output")
        out_bytes = g.numel() * g.element_size() if isinstance(g, torch.Tensor) else 0
    else:
        out_bytes = out.numel() * out.element_size() if isinstance(out, torch.Tensor) else 0
    RECORDER.conv(name[6:], in_bytes, out_bytes, any(s > 1 for s in stride), conv_key(name, pairs))


_SCHEMAS = {
    "aten::convolution": torch.ops.aten.convolution.default._schema,
    "aten::_convolution": torch.ops.aten._convolution.default._schema,
    "aten::convolution_backward": torch.ops.aten.convolution_backward.default._schema,
}


def wrap_new(t, op, host=None):
    """Puts a (meta or CPU) tensor on the probe's 'GPU': a new storage recorded as `op`. A small CPU
    tensor keeps its values (`host`; or give them, for a meta tensor made alike on the CPU)."""
    if isinstance(t, ProbeTensor):
        return t
    elem = t if t.device.type == "meta" else torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")
    if (host is None and KEEP_VALUES[0] and t.device.type == "cpu" and t.layout == torch.strided
            and t.numel() <= HOST_NUMEL):
        host = t.detach().clone()
    return ProbeTensor(elem, Storage(storage_bytes(elem), op), requires_grad=t.requires_grad, host=host)


ProbeTensor.tolist = _tolist
