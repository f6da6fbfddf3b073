"""What the probe records where the CUDA build of PyTorch 2 differs from the installed CPU path:
Mish's fused kernel, batch norm through cuDNN (>= 3-D only), PyTorch 2's foreach Adam/AdamW."""
import unittest

import torch
import torch.nn as nn

from probe_util import meta_module, probe


class TargetGpuTest(unittest.TestCase):
    def test_mish_keeps_its_input_and_one_gradient(self):
        mish, _ = probe(meta_module(lambda: nn.Sequential(nn.Linear(1024, 1024), nn.Mish())), batch=256,
                        input_shape=(1024,), optimizer="sgd")
        relu, _ = probe(meta_module(lambda: nn.Sequential(nn.Linear(1024, 1024), nn.GELU())), batch=256,
                        input_shape=(1024,), optimizer="sgd")
        # GELU's CUDA kernel keeps the same (its input, one gradient): the two must record alike.
        self.assertEqual(mish.live_peak(), relu.live_peak())
        self.assertFalse(any(a[2] in ("softplus", "tanh") for a in mish.allocs.values()))

    def test_batch_norm_runs_through_cudnn_only_on_3d_and_larger_inputs(self):
        bn2d, _ = probe(meta_module(lambda: nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))), batch=2,
                        input_shape=(3, 8, 8))
        ops = {a[2] for a in bn2d.allocs.values()}
        self.assertIn("cudnn_batch_norm", ops)
        self.assertNotIn("native_batch_norm", ops)
        bn1d, _ = probe(meta_module(lambda: nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8))), batch=4, input_shape=(8,))
        ops = {a[2] for a in bn1d.allocs.values()}
        self.assertIn("native_batch_norm", ops)
        self.assertNotIn("cudnn_batch_norm", ops)

    def test_foreach_adam_keeps_one_temporary_list_as_pytorch_2(self):
        for opt in ("adam", "adamw"):
            t, _ = probe(meta_module(lambda: nn.Sequential(nn.Linear(256, 256), nn.Linear(256, 256))), batch=4,
                         input_shape=(256,), optimizer=opt)
            temps = [a for a in t.allocs.values() if a[1] == "optimizer" and a[2].startswith("_foreach")]
            per_step = [a for a in temps if a[3] == 1]
            params = sum(p.numel() * 4 for p in nn.Sequential(nn.Linear(256, 256), nn.Linear(256, 256)).parameters())
            # sqrt(exp_avg_sq) is the only parameter-sized list; eps is added in place.
            self.assertEqual(sum(a[0] for a in per_step), params, opt)
            self.assertEqual({a[2] for a in per_step}, {"_foreach_sqrt"}, opt)


if __name__ == "__main__":
    unittest.main()
