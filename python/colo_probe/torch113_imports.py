"""PyTorch 1.13 modules that do not import on Python 3.11, loaded with the fix PyTorch 2.0 made.

`torch.distributed._shard.sharded_tensor.metadata` declares a dataclass field whose default is an
instance (`field(default=TensorProperties())`); Python 3.11 refuses that ("mutable default ... use
default_factory"), so on Debian 12 (Python 3.11, PyTorch 1.13) every importer of
`torch.distributed._shard` fails: FSDP, and PyTorch Lightning's LightningModule (it registers the
sharded-tensor state-dict hooks on PyTorch < 2.1). PyTorch 2.0 spells it
`field(default_factory=TensorProperties)`, the same default built per instance. While a script is
probed, an import finder loads that one module with that one change, so a script written for the
PyTorch its user has runs on the probe's 1.13 too. Nothing changes where the module imports as it is.
"""

import importlib.machinery
import importlib.util
import os
import sys

import torch

_NAME = "torch.distributed._shard.sharded_tensor.metadata"
_BROKEN = b"field(default=TensorProperties())"
_FIXED = b"field(default_factory=TensorProperties)"


class _FixedSource(importlib.machinery.SourceFileLoader):
    """Compiles the module from its source with the fix, never from a cached .pyc of the original,
    and writes no .pyc of its own."""

    def get_code(self, fullname):
        source = self.get_data(self.path).replace(_BROKEN, _FIXED)
        return compile(source, self.path, "exec", dont_inherit=True)

    def set_data(self, path, data, *args, **kwargs):
        pass


class _Finder:
    @staticmethod
    def find_spec(fullname, path=None, target=None):
        if fullname != _NAME or not path:
            return None
        origin = os.path.join(list(path)[0], "metadata.py")
        return importlib.util.spec_from_file_location(fullname, origin, loader=_FixedSource(fullname, origin))


def needs_fix():
    """True where this PyTorch's module has the default Python refuses (PyTorch 1.13, Python ≥ 3.11)
    and has not been imported yet."""
    if sys.version_info < (3, 11) or _NAME in sys.modules or not hasattr(torch, "distributed"):
        return False
    source = os.path.join(os.path.dirname(torch.distributed.__file__), "_shard", "sharded_tensor", "metadata.py")
    try:
        with open(source, "rb") as f:
            return _BROKEN in f.read()
    except OSError:
        return False


def install(patches):
    """Puts the finder first while the script runs (`patches` undoes it)."""
    if needs_fix():
        patches.set(sys, "meta_path", [_Finder] + list(sys.meta_path))
