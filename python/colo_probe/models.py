"""Loads the model to probe: `torchvision:NAME` or `path/to/file.py:function`. Parameters are created
on the meta device (no memory, no initialisation cost; factories.construct) and put on the probe's
GPU afterwards."""
import importlib.util
import os
import sys

import torch

from .factories import construct

class ProbeSpecError(ValueError):
    pass


class ModelSpec:
    """What the model file provides: the module, and optionally input_fn(batch) and loss_fn(output, batch)."""

    def __init__(self, module, input_fn=None, loss_fn=None, source=""):
        self.module = module
        self.input_fn = input_fn
        self.loss_fn = loss_fn
        self.source = source


def load(spec, num_classes=None):
    if spec.startswith("torchvision:"):
        return _torchvision(spec[len("torchvision:"):], num_classes)
    path, sep, fn_name = spec.rpartition(":")
    if not sep or not path.endswith(".py") or not fn_name:
        raise ProbeSpecError(f"model '{spec}': expected torchvision:NAME or path/to/file.py:function")
    if not os.path.isfile(path):
        raise ProbeSpecError(f"model file '{path}' does not exist")
    mod_spec = importlib.util.spec_from_file_location("colo_probe_user_model", path)
    user = importlib.util.module_from_spec(mod_spec)
    # The file's own folder is importable, as when Python runs it (a helper module beside it).
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    mod_spec.loader.exec_module(user)
    fn = getattr(user, fn_name, None)
    if not callable(fn):
        raise ProbeSpecError(f"{path} has no function '{fn_name}'")
    module = construct(fn)
    if not isinstance(module, torch.nn.Module):
        raise ProbeSpecError(f"{path}:{fn_name}() returned {type(module).__name__}, not a torch.nn.Module")
    return ModelSpec(module, getattr(user, "input_fn", None), getattr(user, "loss_fn", None), spec)


def _torchvision(name, num_classes):
    try:
        import torchvision.models as tvm
    except ImportError as e:
        raise ProbeSpecError(f"torchvision is not installed ({e})")
    ctor = getattr(tvm, name, None)
    # Only model builders: torchvision's registry where it has one (0.14+), else no helpers
    # (get_model, list_models, get_weight take other arguments and return other things).
    known = set(tvm.list_models()) if hasattr(tvm, "list_models") else None
    if (ctor is None or not callable(ctor) or name.startswith("_") or isinstance(ctor, type)
            or (known is not None and name not in known) or name.startswith(("get_", "list_"))):
        raise ProbeSpecError(f"torchvision has no model '{name}'")
    kwargs = {}
    if num_classes is not None:
        kwargs["num_classes"] = num_classes
    if name.startswith("inception"):
        kwargs["init_weights"] = False
    module = construct(lambda: ctor(**kwargs))
    if not isinstance(module, torch.nn.Module):
        raise ProbeSpecError(f"torchvision:{name} is not a model (it returned {type(module).__name__})")
    return ModelSpec(module, source="torchvision:" + name)
