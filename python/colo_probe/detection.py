"""torchvision's detection models: the batch `--probe torchvision:NAME` trains them on, and the
sampler's outcome and training scale the probe assumes (under --probe and --script alike).

The batch is what torchvision's detection reference (references/detection/train.py) feeds the
model: a list of pictures and a list of per-picture targets — boxes and labels, plus masks for
Mask R-CNN and keypoints for Keypoint R-CNN; the model returns its losses, whose sum is trained.
The pictures are --input (default 3x480x640, COCO's most common size; the model's own transform
resizes them to its training size, 800 px on the short side for the R-CNNs). Each holds OBJECTS
objects. The targets' values are real host values the model checks and matches (tensor.py, Values).

Faster, Mask and Keypoint R-CNN train their RoI heads on a sample of each image's proposals
(torchvision/models/detection/_utils.py, BalancedPositiveNegativeSampler): at most
`batch_size_per_image` of them (512), of which at most `positive_fraction` (a quarter) are
positives (proposals matched to a target box: label >= 1), the rest negatives (label 0; -1 is
ignored). Which proposals those are depends on the network's outputs, which the probe does not
have. Without values every proposal passes as both, and the heads run on all of them (2 000 per
image): Mask R-CNN's mask head then records 17 GiB for a job that takes 4. So where an image's
labels are unknown the probe assumes the sample that records the most the sampler allows: a full
batch with the largest positive share — the first num_pos proposals positive (label 1, a valid
class), the next num_neg negative, the rest ignored. The labels keep those values, so everything
that follows (the sampled boxes, the mask head's positives, the losses' indexing) has the size of
that sample, the upper bound of what a real step samples. Labels larger than the probe's host
copies (the RPN's, one per anchor) keep the sampler's own path: every anchor passes, and the
tensors that follow from them are a few MiB at most.
"""
import math

import torch

from . import tensor as pt

DEFAULT_INPUT = (3, 480, 640)
# Objects per picture: COCO train2017 has 860 001 annotated objects on 117 266 pictures, 7.3 each
# (its instances_train2017.json). Memory depends little on it: the sampler below bounds what the
# heads train on, and a target costs a few KiB (a mask one picture's bytes).
OBJECTS = 7


# torchvision's detection reference trains with DistributedDataParallel, one process per GPU.
NO_DATA_PARALLEL = ("a detection model: DataParallel's scatter cannot split its list of pictures "
                    "(torchvision's reference trains it with DistributedDataParallel)")


def checkpoint_root(model):
    """What --checkpointing checkpoints: the backbone's stages (ResNet's layer1..4, SSD's feature
    blocks), which hold the activations. The heads run on data-dependent samples of proposals;
    recomputing them would draw another sample."""
    backbone = getattr(model, "backbone", None)
    if backbone is None:
        return model
    body = getattr(backbone, "body", None)  # the FPN backbones' IntermediateLayerGetter
    return body if isinstance(body, torch.nn.Module) else backbone


def _needs(model):
    """(masks, keypoints per object or 0): what the model's targets must hold."""
    heads = getattr(model, "roi_heads", None)
    masks = bool(heads is not None and heads.has_mask())
    keypoints = 0
    if heads is not None and heads.has_keypoint():
        keypoints = heads.keypoint_predictor.kps_score_lowres.out_channels
    return masks, keypoints


def batch_fn(model):
    """input_fn(batch, input_shape) of a detection model: (pictures, targets) on the host."""
    masks, keypoints = _needs(model)

    def make(batch, input_shape=None):
        shape = tuple(input_shape) if input_shape else DEFAULT_INPUT
        check_input(shape)
        _, height, width = shape
        pictures = [torch.empty(shape, device="meta") for _ in range(batch)]  # values unread: no host copy
        return pictures, [_target(height, width, masks, keypoints) for _ in range(batch)]
    return make


def check_input(shape):
    """A ValueError unless `shape` is a picture the batch can be made of."""
    if len(shape) != 3 or shape[0] != 3:
        raise ValueError(f"--input {'x'.join(map(str, shape))}: a detection model trains on pictures, "
                         "3xHEIGHTxWIDTH (e.g. 3x480x640)")
    if shape[1] < 32 or shape[2] < 32:
        raise ValueError(f"--input {'x'.join(map(str, shape))}: pictures of at least 32x32 pixels hold "
                         f"{OBJECTS} objects")


def _target(height, width, masks, keypoints):
    """OBJECTS upright boxes on a grid over the picture, label 1 (any valid class: memory does not
    depend on which), masks (one picture's bytes each, too large for the probe to keep values of),
    keypoints spread inside each box (COCO's visible = 2)."""
    cols = math.ceil(math.sqrt(OBJECTS))
    rows = math.ceil(OBJECTS / cols)
    cell_w, cell_h = width / cols, height / rows
    boxes = torch.tensor([[(k % cols + 0.1) * cell_w, (k // cols + 0.1) * cell_h,
                           (k % cols + 0.9) * cell_w, (k // cols + 0.9) * cell_h] for k in range(OBJECTS)])
    target = {"boxes": boxes, "labels": torch.ones(OBJECTS, dtype=torch.int64)}
    if masks:
        target["masks"] = torch.empty((OBJECTS, height, width), dtype=torch.uint8, device="meta")
    if keypoints:
        t = (torch.arange(keypoints, dtype=torch.float32) + 0.5) / keypoints
        x = boxes[:, None, 0] + t * (boxes[:, None, 2] - boxes[:, None, 0])
        y = boxes[:, None, 1] + t * (boxes[:, None, 3] - boxes[:, None, 1])
        target["keypoints"] = torch.stack([x, y, torch.full_like(x, 2.0)], 2)
    return target


def loss_fn(output, batch):
    """The reference's loss: the sum of the losses the model returns in training mode."""
    if not isinstance(output, dict) or not output:
        raise ValueError("the detection model returned no losses (is it in training mode with targets?)")
    return sum(output.values())


def _assume_full_sample(sampler, labels):
    n = labels.numel()
    if not isinstance(labels, pt.ProbeTensor) or pt.values_known(labels) or n > pt.HOST_NUMEL or labels.dim() != 1:
        return
    num_pos = min(n, int(sampler.batch_size_per_image * sampler.positive_fraction))
    num_neg = min(n - num_pos, sampler.batch_size_per_image - num_pos)
    host = torch.full((n,), -1, dtype=labels.dtype)
    host[:num_pos] = 1
    host[num_pos:num_pos + num_neg] = 0
    pt.set_values(labels, host)


def _largest_scale(self, k):
    return max(k)


def install(patches):
    """Wraps the sampler where torchvision is installed (nothing to do where it is not), and has the
    R-CNN transform's multi-scale training take its largest scale."""
    try:
        from torchvision.models.detection import _utils
    except Exception:  # noqa: BLE001 - no torchvision, or one without detection models
        return
    try:
        from torchvision.models.detection.transform import GeneralizedRCNNTransform
    except Exception:  # noqa: BLE001 - an older torchvision
        GeneralizedRCNNTransform = None
    if GeneralizedRCNNTransform is not None and hasattr(GeneralizedRCNNTransform, "torch_choice"):
        # Training with several min_size values (Keypoint R-CNN's default 640..800, a user's
        # multi-scale list) resizes each step's pictures to one drawn at random, so the probe's
        # estimate varied from run to run (Keypoint R-CNN at batch 2: 4 558 to 5 998 MiB). The job's
        # caching allocator keeps what its largest scale needed once it has drawn it: that one.
        patches.set(GeneralizedRCNNTransform, "torch_choice", _largest_scale)
    sampler = getattr(_utils, "BalancedPositiveNegativeSampler", None)
    if sampler is None:
        return
    original = sampler.__call__

    def call(self, matched_idxs):
        for labels in matched_idxs:
            _assume_full_sample(self, labels)
        return original(self, matched_idxs)
    patches.set(sampler, "__call__", call)
