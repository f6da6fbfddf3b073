"""torch.cuda.FloatTensor and its kin under --script: PyTorch's legacy tensor types, still common in
older training code (PyTorch-GAN's `Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`,
then `Tensor(n, 1).fill_(1.0)`, `Tensor(np.random.normal(...))`, `imgs.type(Tensor)`;
`torch.set_default_tensor_type("torch.cuda.FloatTensor")`). A CPU build refuses each of them ("type
torch.cuda.FloatTensor not available"). Here each type is a class that makes the probe's GPU tensors
as a CUDA build's type makes CUDA ones, and that isinstance() answers for them."""
import numbers

import torch

DTYPES = {"FloatTensor": torch.float32, "DoubleTensor": torch.float64, "HalfTensor": torch.float16,
          "BFloat16Tensor": torch.bfloat16, "LongTensor": torch.int64, "IntTensor": torch.int32,
          "ShortTensor": torch.int16, "CharTensor": torch.int8, "ByteTensor": torch.uint8,
          "BoolTensor": torch.bool, "ComplexFloatTensor": torch.complex64, "ComplexDoubleTensor": torch.complex128}


class CudaType(type):
    """The metaclass of the probe's torch.cuda.<Name>Tensor."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, torch.Tensor) and obj.is_cuda and obj.dtype == cls.dtype \
            and obj.layout == torch.strided

    def __call__(cls, *args, device=None, **kwargs):
        # PyTorch's legacy constructor: no arguments, sizes (ints or a torch.Size), data (a
        # sequence, an ndarray) or a tensor of the very same type.
        if kwargs:
            raise TypeError(f"{cls}() got an unexpected keyword argument '{next(iter(kwargs))}'")
        device = "cuda" if device is None else device
        if torch.device(device).type != "cuda":  # a CUDA build's own refusal, word for word
            raise RuntimeError(f"legacy constructor expects device type: cuda but device type: "
                               f"{torch.device(device).type} was passed")
        if not args:
            return torch.empty(0, dtype=cls.dtype, device=device)
        if len(args) == 1 and isinstance(args[0], torch.Size):
            args = tuple(args[0])
        if all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
            return torch.empty(args, dtype=cls.dtype, device=device)
        if len(args) == 1 and isinstance(args[0], torch.Tensor):
            if not isinstance(args[0], cls):
                raise TypeError(f"expected {cls} (got {args[0].type()})")
            return args[0]
        if len(args) == 1:
            return torch.tensor(args[0], dtype=cls.dtype, device=device)
        raise TypeError(f"{cls}(): expected sizes (ints), a torch.Size, a sequence or an array of data, "
                        f"got {', '.join(type(a).__name__ for a in args)}")

    def __repr__(cls):
        return f"<class 'torch.cuda.{cls.__name__}'>"

    def __str__(cls):
        return f"torch.cuda.{cls.__name__}"


TYPES = {name: CudaType(name, (), {"dtype": dtype, "is_cuda": True, "__module__": "torch.cuda"})
         for name, dtype in DTYPES.items()}


def cuda_dtype_of(asked):
    """The dtype of a GPU type (one of TYPES or "torch.cuda.<Name>"), else None."""
    if isinstance(asked, CudaType):
        return asked.dtype
    if isinstance(asked, str) and asked.startswith("torch.cuda.") and asked[len("torch.cuda."):] in DTYPES:
        return DTYPES[asked[len("torch.cuda."):]]
    return None


def cuda_type_asked(args, kwargs):
    """The dtype of Tensor.type(T) when T names a GPU type, else None."""
    return cuda_dtype_of(kwargs.get("dtype", args[1] if len(args) > 1 else None))


def install(p, factories):
    """torch.cuda.<Name>Tensor, torch.set_default_tensor_type and torch.Tensor(...) under a GPU default
    type for the script's run."""
    for name, cls in TYPES.items():
        p.set(torch.cuda, name, cls)
    p.set(factories, "LEGACY_DEFAULT_DEVICE", [None])
    real_set_default = torch.set_default_tensor_type

    def set_default_tensor_type(t):
        name = t if isinstance(t, str) else f"{t.__module__}.{t.__name__}" if isinstance(t, type) else None
        if name is not None and name.startswith("torch.cuda."):
            short = name[len("torch.cuda."):]
            if short not in DTYPES:
                raise TypeError(f"invalid type: '{name}'")
            if not DTYPES[short].is_floating_point:
                raise TypeError("only floating-point types are supported as the default type")
            torch.set_default_dtype(DTYPES[short])
            factories.LEGACY_DEFAULT_DEVICE[0] = torch.device("cuda")
            return
        real_set_default(t)
        factories.LEGACY_DEFAULT_DEVICE[0] = None  # back to a CPU type (a set_default_device stays)

    p.set(torch, "set_default_tensor_type", set_default_tensor_type)
    # torch.Tensor(sizes or data) is the legacy constructor of the default type: a GPU tensor under a
    # GPU default type (custom layers' nn.Parameter(torch.Tensor(out, in))). Under set_default_device
    # alone it stays a CPU one, as in PyTorch. Subclasses keep their own construction.
    base_new = torch.Tensor.__new__
    by_dtype = {cls.dtype: cls for cls in TYPES.values()}

    def tensor_new(cls, *args, **kwargs):
        if cls is torch.Tensor and factories.LEGACY_DEFAULT_DEVICE[0] is not None:
            return by_dtype[torch.get_default_dtype()](*args, **kwargs)
        return base_new(cls, *args, **kwargs)

    p.set(torch.Tensor, "__new__", staticmethod(tensor_new))
