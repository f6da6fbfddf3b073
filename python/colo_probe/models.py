"""Loads the model to probe: `torchvision:NAME` or `path/to/file.py:function`. Parameters are created
on the meta device (no memory, no initialisation cost; factories.construct) and put on the probe's
GPU afterwards."""
import importlib.util
import os
import sys

import torch

from . import detection, optical_flow
from .factories import construct

class ProbeSpecError(ValueError):
    pass


class ModelSpec:
    """What the model file provides: the module, and optionally input_fn(batch) and loss_fn(output, batch).
    default_input: the per-sample shape a torchvision model trains on when --input is not given."""

    def __init__(self, module, input_fn=None, loss_fn=None, source="", default_input=None, keep_values=False):
        self.module = module
        self.input_fn = input_fn
        self.loss_fn = loss_fn
        self.source = source
        self.default_input = default_input
        # whether small tensors keep their values (tensor.py, "Values"): where the model's code may
        # read them back (a file's own code; detection checks its targets); a classifier never does
        self.keep_values = keep_values
        # --checkpointing checkpoints this module's top-level children (default: the model's)
        self.checkpoint_root = None
        # why the model cannot run under --data-parallel, where it cannot
        self.no_data_parallel = None
        # check_input(shape) raises a ValueError for an --input the model cannot take
        self.check_input = None


# torchvision's families the probe trains as they come (images or clips in, logits out), with the
# per-sample input of torchvision's reference training recipes (references/{classification,video,
# segmentation}: 224 crops, 299 for Inception; 16-frame clips of 112, 224 for S3D and MViT; 480
# crops for segmentation). Detection trains on pictures with targets (detection.py), optical flow
# on picture pairs with flow targets (optical_flow.py). Quantized models are for inference.
_FAMILIES = (("", None), ("video", (3, 16, 112, 112)), ("segmentation", (3, 480, 480)),
             ("detection", detection.DEFAULT_INPUT), ("optical_flow", optical_flow.DEFAULT_INPUT))


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
    return ModelSpec(module, getattr(user, "input_fn", None), getattr(user, "loss_fn", None), spec, keep_values=True)


def _torchvision(name, num_classes):
    try:
        import torchvision.models as tvm
    except ImportError as e:
        raise ProbeSpecError(f"torchvision is not installed ({e})")
    ctor, default_input, family = _torchvision_builder(tvm, name)
    kwargs = {}
    if family in ("segmentation", "detection"):
        kwargs["weights_backbone"] = None  # its default downloads ImageNet weights; memory does not depend on them
    if num_classes is not None:
        if family == "optical_flow":
            raise ProbeSpecError(f"--num-classes: torchvision:{name} is an optical-flow model, it has no classes")
        kwargs["num_classes"] = num_classes
    if name.startswith("inception"):
        kwargs["init_weights"] = False
    module = construct(lambda: ctor(**kwargs))
    if not isinstance(module, torch.nn.Module):
        raise ProbeSpecError(f"torchvision:{name} is not a model (it returned {type(module).__name__})")
    if family == "detection":
        spec = ModelSpec(module, detection.batch_fn(module), detection.loss_fn, "torchvision:" + name,
                         default_input=default_input, keep_values=True)
        spec.checkpoint_root = detection.checkpoint_root(module)
        spec.no_data_parallel = detection.NO_DATA_PARALLEL
        spec.check_input = detection.check_input
        return spec
    if family == "optical_flow":
        spec = ModelSpec(optical_flow.TrainingStep(module), optical_flow.input_fn, optical_flow.loss_fn,
                         "torchvision:" + name, default_input=default_input)
        spec.checkpoint_root = module
        spec.no_data_parallel = optical_flow.NO_DATA_PARALLEL
        spec.check_input = optical_flow.check_input
        return spec
    return ModelSpec(module, source="torchvision:" + name, default_input=default_input)


def _torchvision_builder(tvm, name):
    """(builder, default per-sample input, family) of torchvision's model `name`, or a ProbeSpecError."""
    full = name
    if name.startswith(("_", "get_", "list_")):
        raise ProbeSpecError(f"torchvision has no model '{name}'")
    registry = hasattr(tvm, "list_models")  # torchvision 0.14+: which names are model builders
    for family, shape in _FAMILIES:
        owner = getattr(tvm, family) if family else tvm
        ctor = getattr(owner, name, None)
        # Only model builders: torchvision's registry where it has one, else no classes or helpers.
        if ctor is None or not callable(ctor) or isinstance(ctor, type):
            continue
        if registry and name not in tvm.list_models(module=owner):
            continue
        if shape is None:
            shape = (3, 299, 299) if name.startswith("inception") else (3, 224, 224)
        elif family == "video" and name.startswith(("s3d", "mvit")):
            shape = (3, 16, 224, 224)
        return ctor, shape, family
    if name.startswith("quantized_"):
        name = name[len("quantized_"):]  # the registry's name of torchvision.models.quantization.NAME
    owner = getattr(tvm, "quantization", None)
    if owner is not None and callable(getattr(owner, name, None)) and not isinstance(getattr(owner, name), type):
        raise ProbeSpecError(f"torchvision:{full} is a quantized model, built for inference; its float version "
                             f"trains: torchvision:{name}")
    raise ProbeSpecError(f"torchvision has no model '{name}'")
