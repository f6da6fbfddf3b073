"""Every meta kernel the probe registers or emulates, against a real CPU run of the operator:
same output shapes, dtypes (and None where the real op returns None)."""
import unittest

import torch

import probe_util  # noqa: F401  (sets the import path)
from colo_probe import meta_kernels
from colo_probe.tensor import ProbeTensor, Storage

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


class PoolingLossesAndNorms(unittest.TestCase):
    """Training operators 1.13 has no meta kernel for (they ran on the CPU, 16 s a step for a
    small 3-D CNN): 3-D max pooling, unpooling, padding and loss backwards, embedding bags,
    weight norm, median and friends."""

    def test_max_pool3d_and_its_backward(self):
        aten = torch.ops.aten
        x = torch.randn(2, 3, 7, 9, 11)
        for k, st, pad, dil, ceil in (([2], [], [0], [1], False), ([3], [2], [1], [1], False),
                                     ([1, 3, 3], [1, 2, 2], [0, 1, 1], [1, 1, 1], True), ([2], [1], [0], [2], False),
                                     ([3, 2, 3], [2, 2, 2], [1, 0, 1], [1, 1, 1], True)):
            with self.subTest(kernel=k, stride=st, padding=pad, dilation=dil, ceil=ceil):
                real = aten.max_pool3d_with_indices(x, k, st, pad, dil, ceil)
                meta = aten.max_pool3d_with_indices(meta_like(x), k, st, pad, dil, ceil)
                same(self, list(real), list(meta))
                g = torch.randn(real[0].shape)
                same(self, aten.max_pool3d_with_indices_backward(g, x, k, st, pad, dil, ceil, real[1]),
                     aten.max_pool3d_with_indices_backward(meta_like(g), meta_like(x), k, st, pad, dil, ceil,
                                                           meta_like(real[1])))
        same(self, list(aten.max_pool3d_with_indices(x[0], [2])), list(aten.max_pool3d_with_indices(meta_like(x[0]), [2])))

    def test_unpooling_padding_and_loss_backwards(self):
        aten = torch.ops.aten
        x = torch.randn(2, 3, 8, 10)
        y, idx = torch.nn.functional.max_pool2d(x, 2, return_indices=True)
        same(self, aten.max_unpool2d(y, idx, [8, 10]), aten.max_unpool2d(meta_like(y), meta_like(idx), [8, 10]))
        x3 = torch.randn(2, 3, 4, 6, 8)
        y3, idx3 = torch.nn.functional.max_pool3d(x3, 2, return_indices=True)
        same(self, aten.max_unpool3d(y3, idx3, [4, 6, 8], [2, 2, 2], [0, 0, 0]),
             aten.max_unpool3d(meta_like(y3), meta_like(idx3), [4, 6, 8], [2, 2, 2], [0, 0, 0]))
        for op, inp, pad in ((aten.replication_pad2d_backward, x, [1, 2, 3, 0]),
                             (aten.replication_pad3d_backward, x3, [1, 1, 2, 0, 1, 1])):
            out = (aten.replication_pad2d if inp.dim() == 4 else aten.replication_pad3d)(inp, pad)
            g = torch.randn(out.shape)
            same(self, op(g, inp, pad), op(meta_like(g), meta_like(inp), pad))
        t = torch.randn(x.shape)
        for reduction in (0, 1):
            g = torch.randn(x.shape) if reduction == 0 else torch.tensor(1.0)
            for op, extra in ((aten.smooth_l1_loss_backward, (1.0,)), (aten.huber_loss_backward, (1.0,)),
                              (aten.soft_margin_loss_backward, ())):
                with self.subTest(op=str(op), reduction=reduction):
                    same(self, op(g, x, t, reduction, *extra), op(meta_like(g), meta_like(x), meta_like(t), reduction, *extra))

    def test_embedding_bag_backward_is_the_whole_tables_gradient(self):
        weight = torch.randn(1000, 16, requires_grad=True)
        for mode in ("sum", "mean"):
            out = torch.nn.functional.embedding_bag(torch.randint(0, 1000, (40,)), weight, torch.arange(0, 40, 5),
                                                    mode=mode)
            real = torch.autograd.grad(out.sum(), weight)[0]
            meta_w = torch.empty(1000, 16, device="meta", requires_grad=True)
            meta_out = torch.nn.functional.embedding_bag(torch.empty(40, dtype=torch.long, device="meta"), meta_w,
                                                         torch.empty(8, dtype=torch.long, device="meta"), mode=mode)
            with self.subTest(mode=mode):
                same(self, real, torch.autograd.grad(meta_out.sum(), meta_w)[0])

    def test_weight_norm_and_its_backward(self):
        aten = torch.ops.aten
        for dtype in (torch.float32, torch.float64):
            for v, dim in ((torch.randn(8, 4, 3), 0), (torch.randn(8, 4, 3), 2)):
                v = v.to(dtype)
                g = torch.norm_except_dim(v, 2, dim)
                with self.subTest(dtype=dtype, dim=dim):
                    real = aten._weight_norm_interface(v, g, dim)
                    same(self, list(real), list(aten._weight_norm_interface(meta_like(v), meta_like(g), dim)))
                    gw = torch.randn(v.shape, dtype=dtype)
                    same(self, list(aten._weight_norm_interface_backward(gw, v, g, real[1], dim)),
                         list(aten._weight_norm_interface_backward(meta_like(gw), meta_like(v), meta_like(g),
                                                                   meta_like(real[1]), dim)))

    def test_median_kthvalue_and_mode(self):
        x = torch.randn(3, 5, 7)
        m = meta_like(x)
        same(self, x.median(), m.median())
        for dim in (0, 1, -1):
            for keepdim in (False, True):
                with self.subTest(dim=dim, keepdim=keepdim):
                    same(self, list(x.median(dim, keepdim)), list(m.median(dim, keepdim)))
                    same(self, list(x.kthvalue(2, dim, keepdim)), list(m.kthvalue(2, dim, keepdim)))
                    same(self, list(x.mode(dim, keepdim)), list(m.mode(dim, keepdim)))
        same(self, list(x.mode()), list(m.mode()))

    def test_3d_nearest_upsampling_rrelu_and_cumulative_operators_with_their_backwards(self):
        # PyTorch 1.13 has no meta kernels for these (3-D U-Nets' decoders, RReLU, logcumsumexp,
        # cummax/cummin): they ran on the CPU, refused at large sizes
        F = torch.nn.functional
        cases = {
            "nearest x2": lambda x: F.interpolate(x, scale_factor=2, mode="nearest"),
            "nearest to a size": lambda x: F.interpolate(x, size=(5, 6, 7), mode="nearest"),
            "nearest-exact x1.5": lambda x: F.interpolate(x, scale_factor=1.5, mode="nearest-exact"),
            "rrelu": lambda x: F.rrelu(x, training=True),
            "logcumsumexp": lambda x: torch.logcumsumexp(x, 2),
            "cummax": lambda x: torch.cummax(x, 1)[0] + torch.cummax(x, 1)[1],
            "cummin": lambda x: torch.cummin(x, 3)[0],
        }
        for channels_last in (False, True):
            x = torch.randn(2, 3, 4, 4, 4)
            if channels_last:
                x = x.to(memory_format=torch.channels_last_3d)
            for name, f in cases.items():
                with self.subTest(name, channels_last=channels_last):
                    real_x = x.clone().requires_grad_()
                    meta_x = meta_like(x).requires_grad_()
                    real, meta = f(real_x), f(meta_x)
                    same(self, real, meta)
                    if name.startswith("nearest"):
                        self.assertEqual(real.stride(), meta.stride())
                    same(self, torch.autograd.grad(real.sum(), real_x)[0], torch.autograd.grad(meta.sum(), meta_x)[0])

    def test_quantization_aware_trainings_fused_observer_and_fake_quantisation(self):
        # torch.ao's FusedMovingAvgObsFakeQuantize, per tensor and per channel (PyTorch 1.13 has no
        # meta kernel for it: QAT ran it on the CPU at every layer, refused at large batches)
        aten = torch.ops.aten
        x = torch.randn(4, 8, 5, 5)
        for per_channel, n in ((False, 1), (True, 4)):  # per channel: a weight's axis 0
            with self.subTest(per_channel=per_channel):
                def state():
                    return [torch.ones(1, dtype=torch.long), torch.ones(1, dtype=torch.long),
                            torch.full((n,), float("inf")), torch.full((n,), float("-inf")),
                            torch.ones(n), torch.zeros(n, dtype=torch.int32)]
                real = aten._fused_moving_avg_obs_fq_helper(x, *state(), 0.01, 0, 255, 0, per_channel, False)
                meta = aten._fused_moving_avg_obs_fq_helper(meta_like(x), *[meta_like(t) for t in state()],
                                                            0.01, 0, 255, 0, per_channel, False)
                same(self, list(real), list(meta))

    def test_pairwise_distances_and_their_backwards(self):
        aten = torch.ops.aten
        x1, x2 = torch.randn(3, 5, 4), torch.randn(3, 6, 4)
        for p in (1.0, 2.0, 3.0):
            with self.subTest(p=p):
                d = aten._cdist_forward(x1, x2, p, None)
                g = torch.randn(d.shape)
                same(self, aten._cdist_backward(g, x1, x2, p, d),
                     aten._cdist_backward(meta_like(g), meta_like(x1), meta_like(x2), p, meta_like(d)))
                x = torch.randn(7, 4)
                pd = aten._pdist_forward(x, p)
                same(self, pd, aten._pdist_forward(meta_like(x), p))
                same(self, aten._pdist_backward(torch.randn(pd.shape), x, p, pd),
                     aten._pdist_backward(meta_like(pd), meta_like(x), p, meta_like(pd)))
        # torch.cdist's default compute_mode is None, which 1.13's own meta kernel of
        # _cdist_forward refuses; the probe passes ATen's reading of it (0) there, and None where the
        # meta kernel takes it (PyTorch 2, whose meta kernel refuses 0)
        args = (meta_like(x1), meta_like(x2), 1.0, None)
        fix = meta_kernels.ARGUMENT_FIXES.get("aten::_cdist_forward")
        if fix is not None:
            args, _ = fix(args, {})
        self.assertEqual(fix is not None, int(torch.__version__.split(".")[0]) < 2)
        same(self, aten._cdist_forward(x1, x2, 1.0, None), aten._cdist_forward(*args))

    def test_ctc_loss_takes_its_shapes_from_the_lengths(self):
        # log_alpha is [batch, T, 2 x longest target + 1]: the lengths' values, which the probe has
        # on the host; unknown, the most they could be (padded targets' width).
        log_probs = torch.randn(30, 4, 6).log_softmax(-1)
        targets = torch.randint(1, 6, (4, 12))
        input_lengths, target_lengths = [30, 28, 30, 25], [12, 7, 3, 9]
        real = torch.ops.aten._ctc_loss(log_probs, targets, input_lengths, target_lengths)
        kernel, _ = meta_kernels.CTC["aten::_ctc_loss"]
        meta = kernel([meta_like(log_probs), meta_like(targets)], input_lengths, target_lengths)
        same(self, list(real), list(meta))
        self.assertEqual(tuple(kernel([meta_like(log_probs), meta_like(targets)], None, None)[1].shape), (4, 30, 25))
        concatenated = torch.randint(1, 6, (31,))
        real = torch.ops.aten._ctc_loss(log_probs, concatenated, input_lengths, target_lengths)
        same(self, list(real), list(kernel([meta_like(log_probs), meta_like(concatenated)], input_lengths, target_lengths)))
        grad = torch.ops.aten._ctc_loss_backward(torch.ones(4), log_probs, targets, input_lengths, target_lengths,
                                                 *torch.ops.aten._ctc_loss(log_probs, targets, input_lengths, target_lengths), 0)
        kernel, _ = meta_kernels.CTC["aten::_ctc_loss_backward"]
        same(self, grad, kernel([None, meta_like(log_probs)], input_lengths, target_lengths))


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
        # what the probe's tensors get, whatever meta kernel is installed (torchvision 0.17 and later
        # register one that refuses meta tensors)
        meta = ProbeTensor(torch.empty(11, 4, device="meta"), Storage(0, "test"))
        kept = torch.ops.torchvision.nms(meta, ProbeTensor(meta_like(self.scores), Storage(0, "test")), 0.3)
        self.assertEqual((kept.dtype, kept.device.type, tuple(kept.shape)), (real.dtype, "meta", (11,)))
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
