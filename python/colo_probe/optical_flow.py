"""torchvision's optical-flow models (RAFT) under `--probe torchvision:NAME`: the training step of
torchvision's reference (references/optical_flow/train.py, utils.py).

Each step takes two pictures, the ground-truth flow between them and the mask of pixels where it
is valid, all on the GPU; the model refines its flow estimate `num_flow_updates` times (12 in
training) and returns every estimate; the loss weighs each estimate's distance to the truth,
later ones more (sequence_loss). The reference also computes metrics of the last estimate: a few
per-pixel tensors, freed before backward, not recorded here.
"""
import torch

# The reference's first stage, FlyingChairs, crops pictures to 368x496 (train.py,
# _get_train_dataset: OpticalFlowPresetTrain(crop_size=(368, 496))).
DEFAULT_INPUT = (3, 368, 496)
NUM_FLOW_UPDATES = 12  # train.py's --num_flow_updates default
GAMMA = 0.8            # train.py's --gamma default
MAX_FLOW = 400         # utils.sequence_loss's default

NO_DATA_PARALLEL = ("an optical-flow model: torchvision's reference trains it with DistributedDataParallel, and "
                    "DataParallel would split its keyword argument num_flow_updates")


def check_input(shape):
    """A ValueError unless `shape` is a picture RAFT can take (its encoders downsample 8 times)."""
    if len(shape) != 3 or shape[0] != 3:
        raise ValueError(f"--input {'x'.join(map(str, shape))}: an optical-flow model takes pairs of pictures, "
                         "3xHEIGHTxWIDTH (e.g. 3x368x496)")
    if shape[1] % 8 or shape[2] % 8:
        raise ValueError(f"--input {'x'.join(map(str, shape))}: RAFT takes pictures whose height and width are "
                         "multiples of 8")


def input_fn(batch, input_shape=None):
    """(image1, image2, flow_gt, valid_flow_mask): what the reference's data loader yields."""
    shape = tuple(input_shape) if input_shape else DEFAULT_INPUT
    check_input(shape)
    _, height, width = shape
    image = (batch,) + shape
    return (torch.empty(image, device="meta"), torch.empty(image, device="meta"),
            torch.empty((batch, 2, height, width), device="meta"),
            torch.empty((batch, height, width), dtype=torch.bool, device="meta"))


class TrainingStep(torch.nn.Module):
    """model(image1, image2, num_flow_updates=12), as the reference calls it, on the batch above."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, image1, image2, flow_gt, valid_flow_mask):
        return self.model(image1, image2, num_flow_updates=NUM_FLOW_UPDATES)


def loss_fn(flow_preds, batch):
    """references/optical_flow/utils.py, sequence_loss."""
    _, _, flow_gt, valid_flow_mask = batch
    flow_norm = torch.sum(flow_gt ** 2, dim=1).sqrt()
    valid_flow_mask = valid_flow_mask & (flow_norm < MAX_FLOW)
    valid_flow_mask = valid_flow_mask[:, None, :, :]
    flow_preds = torch.stack(flow_preds)  # (num_flow_updates, batch, 2, H, W)
    abs_diff = (flow_preds - flow_gt).abs()
    abs_diff = (abs_diff * valid_flow_mask).mean(axis=(1, 2, 3, 4))
    weights = GAMMA ** torch.arange(flow_preds.shape[0] - 1, -1, -1).to(flow_gt.device)
    return (abs_diff * weights).sum()
