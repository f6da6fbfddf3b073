"""colo_probe: records, on the CPU and without a GPU, every storage a PyTorch training job would
place on the GPU during two training iterations, in order, as a compact trace (trace.py documents
the format). colo's `trace` estimator replays it through its caching-allocator model.

Runs on PyTorch 1.13 (Debian 12's python3-torch) and 2.x. Tensors are meta tensors wrapped in a
subclass (tensor.py) whose storages carry a token; a token's creation is an allocation and its
destruction (CPython reference counting: deterministic) the matching free."""

TRACE_VERSION = 1
__version__ = "1.1"
