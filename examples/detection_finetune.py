#!/usr/bin/env python3
"""Object detection and instance segmentation training, as torchvision's detection fine-tuning
tutorial writes it (pytorch/tutorials, intermediate_source/torchvision_tutorial.py): a data set of
images with per-object boxes, labels and masks, a DataLoader whose collate_fn keeps the images'
own sizes, one of torchvision's detection models with a new box (and mask, keypoint) predictor for
its classes, SGD with momentum and a StepLR schedule. The images are generated (pedestrian-sized
rectangles on noise), so it runs offline; memory does not depend on the pictures.

    colo estimate --script examples/detection_finetune.py --estimator trace -- --model maskrcnn_resnet50_fpn
    colo submit --probe-script -- python3 examples/detection_finetune.py --model fasterrcnn_resnet50_fpn --batch-size 4

`--weights DEFAULT` fine-tunes from torchvision's COCO weights as the tutorial does (frozen batch
norm, three trainable backbone stages): they come from torchvision's cache ($TORCH_HOME), or are
downloaded. Works on PyTorch 1.13 and 2.x, on a GPU when there is one, else on the CPU.
"""
import argparse

import torch
from torchvision.models import detection
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor
from torchvision.models.detection.keypoint_rcnn import KeypointRCNNPredictor
from torchvision.models.detection.mask_rcnn import MaskRCNNPredictor


class GeneratedPedestrians(torch.utils.data.Dataset):
    """PennFudanPed's shape: H x W pictures with 1-4 upright objects each, their boxes, masks and
    17 keypoints (for keypoint R-CNN)."""

    def __init__(self, n, height, width, seed=0):
        self.n, self.height, self.width, self.seed = n, height, width, seed

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.seed + i)
        image = torch.rand(3, self.height, self.width, generator=g)
        count = int(torch.randint(1, 5, (1,), generator=g))
        w = self.width / 8 + torch.rand(count, generator=g) * self.width / 6
        h = w * 2.5
        x0 = torch.rand(count, generator=g) * (self.width - w)
        y0 = torch.rand(count, generator=g) * (self.height - h).clamp(min=1)
        boxes = torch.stack([x0, y0, x0 + w, (y0 + h).clamp(max=self.height - 1)], 1)
        masks = torch.zeros(count, self.height, self.width, dtype=torch.uint8)
        for k, (a, b, c, d) in enumerate(boxes.round().int().tolist()):
            masks[k, b:d, a:c] = 1
        kx = boxes[:, None, 0] + torch.rand(count, 17, generator=g) * w[:, None]
        ky = boxes[:, None, 1] + torch.rand(count, 17, generator=g) * h[:, None]
        target = {"boxes": boxes, "labels": torch.ones(count, dtype=torch.int64), "masks": masks,
                  "keypoints": torch.stack([kx, ky, torch.ones_like(kx)], 2),
                  "image_id": torch.tensor([i]), "area": w * h, "iscrowd": torch.zeros(count, dtype=torch.int64)}
        return image, target


def build(name, num_classes, weights, trainable_layers):
    """The tutorial's model: a torchvision detection model whose predictors are replaced for our
    classes (RetinaNet, FCOS and SSD are built for them directly)."""
    kwargs = {} if trainable_layers is None else {"trainable_backbone_layers": trainable_layers}
    builder = getattr(detection, name)
    if "rcnn" not in name:
        return builder(weights=None, weights_backbone="DEFAULT" if weights else None, num_classes=num_classes,
                       **kwargs)
    model = builder(weights=weights, weights_backbone=None, **kwargs)
    roi = model.roi_heads
    roi.box_predictor = FastRCNNPredictor(roi.box_predictor.cls_score.in_features, num_classes)
    if roi.mask_predictor is not None:
        roi.mask_predictor = MaskRCNNPredictor(roi.mask_predictor.conv5_mask.in_channels, 256, num_classes)
    if roi.keypoint_predictor is not None:
        roi.keypoint_predictor = KeypointRCNNPredictor(roi.keypoint_predictor.kps_score_lowres.in_channels, 17)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="maskrcnn_resnet50_fpn", help="a torchvision.models.detection builder")
    ap.add_argument("--batch-size", type=int, default=2)
    ap.add_argument("--height", type=int, default=480)
    ap.add_argument("--width", type=int, default=640)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--weights", default=None, help="DEFAULT: fine-tune from torchvision's COCO weights")
    ap.add_argument("--trainable-backbone-layers", type=int, default=None)
    ap.add_argument("--amp", action="store_true")
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0, help="the shuffle's seed: which pictures (1-4 objects) come first")
    args = ap.parse_args()
    torch.manual_seed(args.seed)

    device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    model = build(args.model, 2, args.weights, args.trainable_backbone_layers).to(device)
    data = GeneratedPedestrians(200, args.height, args.width)
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                                         collate_fn=lambda batch: tuple(zip(*batch)))
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=0.005, momentum=0.9, weight_decay=0.0005)
    lr_scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.1)
    scaler = torch.cuda.amp.GradScaler() if args.amp else None
    for epoch in range(args.epochs):
        model.train()
        for step, (images, targets) in enumerate(loader):
            images = [image.to(device) for image in images]
            targets = [{k: v.to(device) for k, v in t.items()} for t in targets]
            with torch.autocast(device.type, enabled=args.amp):
                loss_dict = model(images, targets)
                losses = sum(loss for loss in loss_dict.values())
            optimizer.zero_grad()
            if scaler is not None:
                scaler.scale(losses).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                losses.backward()
                optimizer.step()
            print(f"epoch {epoch} step {step} loss {losses.item():.4f}", flush=True)
        lr_scheduler.step()


if __name__ == "__main__":
    main()
