"""Every meta kernel the probe registers or emulates, against a real CPU run of the operator:
same output shapes, dtypes (and None where the real op returns None)."""
import unittest

import torch

import probe_util  # noqa: F401  (sets the import path)
from colo_probe import meta_kernels

meta_kernels.register()


def meta_like(t):
    return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta") if isinstance(t, torch.Tensor) else t


def same(testcase, real, meta):
    if real is None:
        testcase.assertIsNone(meta)
        return
    if isinstance(real, (list, tuple)):
        testcase.assertEqual(len(real), len(meta))
        for r, m in zip(real, meta):
            same(testcase, r, m)
        return
    testcase.assertEqual(tuple(real.shape), tuple(meta.shape))
    testcase.assertEqual(real.dtype, meta.dtype)
    testcase.assertEqual(meta.device.type, "meta")


class ConvolutionBackward(unittest.TestCase):
    CASES = [
        # input, weight, stride, padding, dilation, transposed, output_padding, groups
        ((2, 4, 9, 9), (6, 4, 3, 3), [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
        ((2, 4, 9, 9), (8, 2, 3, 3), [2, 2], [0, 0], [1, 1], False, [0, 0], 2),
        ((2, 6, 10, 10), (6, 1, 3, 3), [1, 1], [2, 2], [2, 2], False, [0, 0], 6),  # depthwise, dilated
        ((2, 4, 5, 5), (4, 3, 3, 3), [2, 2], [1, 1], [1, 1], True, [1, 1], 1),    # transposed
        ((2, 4, 5, 5), (4, 3, 3, 3), [1, 1], [0, 0], [1, 1], True, [0, 0], 2),    # transposed, grouped
        ((2, 3, 17), (5, 3, 4), [3], [1], [1], False, [0], 1),                    # 1-d
        ((1, 2, 4, 5, 6), (3, 2, 2, 2, 2), [1, 1, 1], [0, 0, 0], [1, 1, 1], False, [0, 0, 0], 1),  # 3-d
    ]

    def test_matches_cpu(self):
        for inp, w, stride, pad, dil, tr, opad, groups in self.CASES:
            x = torch.randn(inp)
            weight = torch.randn(w)
            bias_n = w[1] * groups if tr else w[0]
            out = torch.ops.aten.convolution(x, weight, torch.randn(bias_n), stride, pad, dil, tr, opad, groups)
            g = torch.randn(out.shape)
            for mask in ([True, True, True], [True, True, False], [False, True, True]):
                real = torch.ops.aten.convolution_backward(g, x, weight, [bias_n], stride, pad, dil, tr, opad, groups, mask)
                meta = torch.ops.aten.convolution_backward(meta_like(g), meta_like(x), meta_like(weight), [bias_n],
                                                           stride, pad, dil, tr, opad, groups, mask)
                with self.subTest(input=inp, weight=w, mask=mask):
                    same(self, [r if m else None for r, m in zip(real, mask)], [t if m else None for t, m in zip(meta, mask)])


class AdaptivePoolBackward(unittest.TestCase):
    def test_matches_cpu(self):
        for shape, out in (((2, 3, 7, 9), (1, 1)), ((2, 3, 8, 8), (3, 2))):
            x = torch.randn(shape)
            y = torch.ops.aten._adaptive_avg_pool2d(x, out)
            real = torch.ops.aten._adaptive_avg_pool2d_backward(torch.randn(y.shape), x)
            meta = torch.ops.aten._adaptive_avg_pool2d_backward(meta_like(y), meta_like(x))
            same(self, real, meta)
        x = torch.randn(1, 2, 4, 5, 6)
        y = torch.ops.aten._adaptive_avg_pool3d(x, (2, 2, 2))
        same(self, torch.ops.aten._adaptive_avg_pool3d_backward(torch.randn(y.shape), x),
             torch.ops.aten._adaptive_avg_pool3d_backward(meta_like(y), meta_like(x)))


class GridSampler(unittest.TestCase):
    def test_matches_cpu(self):
        for op, shape, grid_shape in ((torch.ops.aten.grid_sampler_2d_backward, (2, 3, 7, 9), (2, 5, 4, 2)),
                                      (torch.ops.aten.grid_sampler_3d_backward, (2, 3, 4, 5, 6), (2, 3, 2, 4, 3))):
            x = torch.randn(shape)
            grid = torch.rand(grid_shape) * 2 - 1
            y = torch.nn.functional.grid_sample(x, grid, align_corners=False)
            same(self, y, torch.nn.functional.grid_sample(meta_like(x), meta_like(grid), align_corners=False))
            for mask in ([True, True], [False, True]):
                with self.subTest(op=op._qualified_op_name, mask=mask):
                    real = op(torch.randn(y.shape), x, grid, 0, 0, False, mask)
                    meta = op(meta_like(y), meta_like(x), meta_like(grid), 0, 0, False, mask)
                    same(self, [real[0] if mask[0] else None, real[1]], list(meta))


class NllLoss2d(unittest.TestCase):
    def test_matches_cpu(self):
        x = torch.randn(2, 5, 6, 7).log_softmax(1)
        target = torch.randint(0, 5, (2, 6, 7))
        for reduction in (0, 1, 2):  # none, mean, sum
            for weight in (None, torch.rand(5)):
                with self.subTest(reduction=reduction, weight=weight is not None):
                    real = torch.ops.aten.nll_loss2d_forward(x, target, weight, reduction, -100)
                    meta = torch.ops.aten.nll_loss2d_forward(meta_like(x), meta_like(target), meta_like(weight),
                                                             reduction, -100)
                    same(self, real, meta)


class Foreach(unittest.TestCase):
    """meta_kernels.foreach stands in for every torch._foreach_* operator: out-of-place ones allocate
    one tensor per input tensor, in-place ones nothing."""

    def check(self, op, *args):
        real = op(*args)
        meta_args = [[meta_like(t) for t in a] if isinstance(a, list) else a for a in args]
        meta = meta_kernels.foreach(op._schema, meta_args)
        same(self, real if real is not None and len(op._schema.returns) else None, meta)

    def test_matches_cpu(self):
        ts = [torch.randn(3, 4), torch.randn(5), torch.randn(2, 2, 2)]
        us = [torch.randn(3, 4), torch.randn(5), torch.randn(2, 2, 2)]
        aten = torch.ops.aten
        self.check(aten._foreach_sqrt.default, ts)
        self.check(aten._foreach_add.List, ts, us)
        self.check(aten._foreach_add.Scalar, ts, 2.0)
        self.check(aten._foreach_mul.Scalar, ts, 2.0)
        self.check(aten._foreach_div.List, ts, us)
        self.check(aten._foreach_addcdiv.Scalar, ts, us, us, 0.5)
        self.check(aten._foreach_neg.default, ts)
        self.check(aten._foreach_mul_.Scalar, [t.clone() for t in ts], 2.0)
        self.check(aten._foreach_add_.List, [t.clone() for t in ts], us)
        self.check(aten._foreach_addcmul_.Scalar, [t.clone() for t in ts], us, us, 0.1)


class TorchvisionDetectionOps(unittest.TestCase):
    """torchvision's RoI and NMS operators (detection models), against their CPU kernels."""

    def setUp(self):
        import torchvision  # noqa: F401 - its operators
        g = torch.Generator().manual_seed(0)
        self.features = torch.randn(2, 8, 25, 30, generator=g)
        xy = torch.rand(11, 2, generator=g) * 20
        boxes = torch.cat([xy, xy + 1 + torch.rand(11, 2, generator=g) * 10], 1)
        self.rois = torch.cat([torch.randint(0, 2, (11, 1), generator=g).float(), boxes], 1)
        self.scores = torch.rand(11, generator=g)

    def test_roi_align_and_its_backward(self):
        tv = torch.ops.torchvision
        for aligned in (False, True):
            real = tv.roi_align(self.features, self.rois, 0.5, 7, 5, 2, aligned)
            meta = tv.roi_align(meta_like(self.features), meta_like(self.rois), 0.5, 7, 5, 2, aligned)
            same(self, real, meta)
            args = (0.5, 7, 5, 2, 8, 25, 30, 2, aligned)
            same(self, tv._roi_align_backward(real, self.rois, *args),
                 tv._roi_align_backward(meta_like(real), meta_like(self.rois), *args))

    def test_gradients_flow_through_roi_align_on_meta_tensors(self):
        # Its autograd kernel stays in force (the probe adds one below autograd only for operators
        # without a formula, nms): the RoI heads' gradient reaches the features.
        x = torch.empty(2, 8, 25, 30, device="meta", requires_grad=True)
        y = torch.ops.torchvision.roi_align(x, meta_like(self.rois), 0.5, 7, 5, 2, False)
        self.assertIsNotNone(y.grad_fn)
        y.sum().backward()
        self.assertEqual(tuple(x.grad.shape), (2, 8, 25, 30))

    def test_roi_pool_and_its_backward(self):
        tv = torch.ops.torchvision
        real = tv.roi_pool(self.features, self.rois, 0.5, 7, 5)
        meta = tv.roi_pool(meta_like(self.features), meta_like(self.rois), 0.5, 7, 5)
        same(self, real, meta)
        same(self, tv._roi_pool_backward(real[0], self.rois, real[1], 0.5, 7, 5, 2, 8, 25, 30),
             tv._roi_pool_backward(meta_like(real[0]), meta_like(self.rois), meta_like(real[1]), 0.5, 7, 5, 2, 8, 25, 30))

    def test_nms_keeps_every_box_the_most_it_could(self):
        boxes = torch.tensor([[0.0, 0.0, 10.0, 10.0]]).repeat(11, 1) + torch.rand(11, 4) * 0.5  # all overlap
        real = torch.ops.torchvision.nms(boxes, self.scores, 0.3)
        meta = torch.ops.torchvision.nms(meta_like(boxes), meta_like(self.scores), 0.3)
        self.assertEqual((meta.dtype, meta.device.type, tuple(meta.shape)), (real.dtype, "meta", (11,)))
        self.assertEqual(real.numel(), 1)  # the real run keeps the best of the overlapping boxes


class CpuFallback(unittest.TestCase):
    def test_runs_an_op_on_the_cpu_and_returns_meta_shapes(self):
        x = torch.randn(2, 3, 8, 8)
        real = torch.ops.aten.max_pool2d_with_indices(x, [2, 2])
        meta = meta_kernels.cpu_fallback(torch.ops.aten.max_pool2d_with_indices.default, (meta_like(x), [2, 2]), {})
        same(self, list(real), list(meta))

    def test_a_sampling_op_gets_inputs_it_accepts(self):
        # torch.distributions.Categorical(...).sample(): multinomial refuses all-zero probabilities.
        probs = torch.rand(4, 6)
        real = torch.ops.aten.multinomial(probs, 1)
        meta = meta_kernels.cpu_fallback(torch.ops.aten.multinomial.default, (meta_like(probs), 1), {})
        same(self, real, meta)

    def test_a_data_dependent_op_keeps_every_element(self):
        # Unknown values: the most nonzero could return (booleans read True, as host reads do).
        mask = torch.empty((5, 7), dtype=torch.bool, device="meta")
        meta = meta_kernels.cpu_fallback(torch.ops.aten.nonzero.default, (mask,), {})
        self.assertEqual(tuple(meta.shape), (35, 2))

    def test_indexing_keeps_the_dimensions_after_the_indexed_ones(self):
        # aten::index by a mask or index tensors of unknown values: every element kept, and the
        # dimensions the indices do not reach keep their sizes, wherever NumPy's rules put them
        # (the fallback indexes a tensor whose trailing dimensions are 1: RetinaNet's 11 M logits).
        x = torch.randn(6, 5, 4, 3)
        mask = torch.ones(6, dtype=torch.bool)
        rows = torch.zeros(7, dtype=torch.long)
        cols = torch.zeros(7, dtype=torch.long)
        mask2 = torch.ones(6, 5, dtype=torch.bool)  # a mask reaches as many dimensions as it has
        for indices in ([mask], [rows], [None, cols], [rows, None, cols], [rows, cols], [mask, None, None, None],
                        [mask2], [mask2, None, torch.zeros(30, dtype=torch.long)], [None, torch.ones(5, dtype=torch.uint8)]):
            with self.subTest(indices=[None if i is None else (tuple(i.shape), i.dtype) for i in indices]):
                real = torch.ops.aten.index.Tensor(x, indices)
                meta = meta_kernels.cpu_fallback(torch.ops.aten.index.Tensor, (meta_like(x), [meta_like(i) for i in indices]), {})
                same(self, real, meta)

    def test_sparse_tensors_are_refused_with_the_reason(self):
        grad = torch.sparse_coo_tensor(torch.zeros((1, 3), dtype=torch.long), torch.ones(3, 4), (10, 4))
        with self.assertRaisesRegex(NotImplementedError, "sparse_coo tensor: the probe records dense tensors only"):
            meta_kernels.cpu_fallback(torch.ops.aten._coalesce.default, (grad.to("meta"),), {})

    def test_refuses_huge_inputs(self):
        big = torch.empty((1 << 28,), device="meta")
        with self.assertRaises(NotImplementedError):
            meta_kernels.cpu_fallback(torch.ops.aten.neg.default, (big,), {})


if __name__ == "__main__":
    unittest.main()
