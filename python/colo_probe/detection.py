"""torchvision's detection models under --script: the sampler's outcome the probe assumes.

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
import torch

from . import tensor as pt


def _assume_full_sample(sampler, labels):
    n = labels.numel()
    if not isinstance(labels, pt.ProbeTensor) or pt.values_known(labels) or n > pt.HOST_NUMEL or labels.dim() != 1:
        return
    num_pos = min(n, int(sampler.batch_size_per_image * sampler.positive_fraction))
    num_neg = min(n - num_pos, sampler.batch_size_per_image - num_pos)
    host = torch.full((n,), -1, dtype=labels.dtype)
    host[:num_pos] = 1
    host[num_pos:num_pos + num_neg] = 0
    pt.assume_values(labels, host)


def install(patches):
    """Wraps the sampler where torchvision is installed (nothing to do where it is not)."""
    try:
        from torchvision.models.detection import _utils
    except Exception:  # noqa: BLE001 - no torchvision, or one without detection models
        return
    sampler = getattr(_utils, "BalancedPositiveNegativeSampler", None)
    if sampler is None:
        return
    original = sampler.__call__

    def call(self, matched_idxs):
        for labels in matched_idxs:
            _assume_full_sample(self, labels)
        return original(self, matched_idxs)
    patches.set(sampler, "__call__", call)
