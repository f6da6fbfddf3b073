"""GPUMemNet's synthetic networks rebuilt as PyTorch modules from the data set's rows, and probed in
bulk (one Python process, torch imported once):

    python3 -m colo_probe.gpumemnet --csv cnn.csv --kind cnn|mlp --out-dir DIR [--optimizer adam]
        [--limit N] [--rows-matching SUBSTR] [--rows 3,17] [--no-summary-pass]

writes DIR/<i>.trace (the `python3 -m colo_probe` trace format, trace.py) for every row i (0-based
data row of the CSV) that rebuilds exactly, and DIR/index.jsonl, one JSON object per row:
    {"row", "filename", "kind", "arch", "measured_mib", "status": "ok"|"skipped", "reason",
     "trace", "params", "seconds", "oom", "layers_from", "peak_live_mib", "note"}
read by the C++ side's TraceLibrary (src/estimate/trace/trace_library.h) by filename.

Where the networks come from (github.com/itu-rad/GPUMemNet, read at the commits that generated the
data): NeuroNetGen_scripts/CNN/cnn.py (commit c4c6aa8, unchanged until e041e64; the data's ranges --
1 or 3 channels, 1..1000 classes, 16..127 base filters, input 2..224, batch 2..62 -- are those of
launcher_cnn.py at afed9d4/e041e64, which never passes --use_pooling) and
NeuroNetGen_scripts/MLP/mlp_next.py (9daf4d7/e041e64, launcher_mlp_next.py). The rows' layer lists
come from the repository's cleaners (data_cleaner_cnn_step1.py at a79a76a, data_cleaner_mlp_step2.py)
reading the `torchsummary` table each run printed before training:
  - CNN: ('conv2d' | 'batch_norm2d' | 'dropout' | 'adaptive_avg_pool2d', H*W of the output, params);
    ('linear', out_features, params); ('Softmax', 0, 0); any other module with a 4-D output as
    (the last letters before '-N' in its summary name, H*W, 0): activations by class name,
    'Identity' (a residual shortcut's), 'd' (AvgPool2d: the regex stops at the '2'). A Sigmoid
    head (2-D output) is dropped. Parameters are torchsummary's (weight + bias); activations are
    listed with 0 (nn.PReLU's one parameter is not in the row).
  - MLP: ('linear' | 'batch_normalization' | 'dropout' | activation class name, out features, params).

What the generator trained (cnn.py train_model / mlp_next.py train): model.to('cuda'); torchsummary's
forward of two random samples on the GPU (with autograd, everything freed again: the "summary pass",
recorded here as the trace's first forward-phase records unless --no-summary-pass); Adam(lr=1e-3);
random inputs (torch.randn) and random integer labels; loop of zero_grad(), forward, loss, backward,
step for 60 s; nvidia-smi's peak is the row's "Max GPU Memory (MiB)".
  - CNN: CrossEntropyLoss on the Softmax output (num_classes > 1); with one class the head is
    Sigmoid and BCELoss(outputs [B,1], long labels [B]) raises a size mismatch after the first
    forward, so such a row measured one forward pass, not training: skipped, with that reason.
  - MLP: CrossEntropyLoss on the Softmax output; with one output, BCEWithLogitsLoss on the Sigmoid
    (or Identity, chosen at random by the generator: the row says which) output against
    labels.view(-1, 1).float().

Every network is rebuilt from its row, not from the generator's random draws: each conv's
in/out channels follow from its parameter count and the generator's block structure, each stride
from the H*W the row lists; the rebuilt module is then summarised the way torchsummary and the cleaner
did (a meta-device forward with hooks) and that list must equal the row's exactly -- type, H*W or
width, and parameter count of every layer -- or the row is refused with the first difference.
Rows with an empty layer list: input_size < 7 makes the generator's math.log2(input_size // 7) raise
before anything reaches the GPU (measured 0 MiB): skipped. Otherwise (dense with depth < 4, residual
with depth < 2: no block, no activation, so the cleaner's most-common-activation raised and it wrote
[]) the network is the generator's head alone (AdaptiveAvgPool2d, Linear(channels, classes),
Softmax), rebuilt from the filename ("layers_from": "generator").
OOM_CRASH rows are probed like the others and flagged "oom": true (their measured figure is where the
GPU ran out, not a peak)."""
import argparse
import ast
import csv
import json
import math
import os
import re
import sys
import time

import torch
import torch.nn as nn

from .errors import reason
from .factories import MetaInit
from .models import ModelSpec

KINDS = ("cnn", "mlp")
CNN_ARCHS = ("pyramid", "uniform", "bottleneck", "gradual", "hourglass", "residual", "dense", "reverse_pyramid")
MLP_ARCHS = ("pyramid", "uniform", "bottleneck", "gradual")

# The generators' activation choices (cnn.py activation_functions, mlp_next.py valid_hidden_activations).
ACTIVATIONS = {
    "relu": nn.ReLU, "leaky_relu": nn.LeakyReLU, "prelu": nn.PReLU, "elu": nn.ELU, "selu": nn.SELU,
    "gelu": nn.GELU, "tanh": nn.Tanh, "swish": nn.SiLU, "softplus": nn.Softplus, "mish": nn.Mish,
    "identity": nn.Identity,
}
DENSE_LAYERS = 4      # cnn.py: DenseBlock(..., num_layers=4)
DENSE_GROWTH = 32     # cnn.py: CNN(growth_rate=32), never overridden
MAX_FILTERS = 2048    # cnn.py: max_filters


class RebuildError(ValueError):
    """The row cannot be rebuilt exactly; the message says why."""


# ------------------------------------------------------------------------------------------------
# Rows

_CNN_NAME = re.compile(
    r"input_channels:(?P<input_channels>\d+)_num_classes:(?P<num_classes>\d+)_depth:(?P<depth>\d+)"
    r"_arch:(?P<arch>[a-z_]+?)_base_filters:(?P<base_filters>\d+)_batch:(?P<batch>\d+)"
    r"_input_size:(?P<input_size>\d+)_act:(?P<act>[a-z_]+?)_dropout:(?P<dropout_rate>[0-9.eE+-]+)"
    r"_dropout:(?P<dropout>True|False)_batchnorm:(?P<batchnorm>True|False)\.out")
_MLP_NAME = re.compile(
    r"input:(?P<input>\d+)_output:(?P<output>\d+)_depth:(?P<depth>\d+)_arch:(?P<arch>[a-z_]+?)"
    r"_batch:(?P<batch>\d+)_act:(?P<act>[a-z_]+?)_dropout:(?P<dropout_rate>[0-9.eE+-]+)"
    r"_dropout:(?P<dropout>True|False)_batchnorm:(?P<batchnorm>True|False)\.out")


def parse_filename(name, kind):
    """The generator's hyper-parameters encoded in a row's Filename."""
    m = (_CNN_NAME if kind == "cnn" else _MLP_NAME).fullmatch(name.strip())
    if not m:
        raise RebuildError(f"filename '{name[:120]}' does not follow the {kind} generator's pattern")
    hp = {}
    for k, v in m.groupdict().items():
        if k in ("arch", "act"):
            hp[k] = v
        elif k in ("dropout", "batchnorm"):
            hp[k] = v == "True"
        elif k == "dropout_rate":
            hp[k] = float(v)
        else:
            hp[k] = int(v)
    if hp["act"] not in ACTIVATIONS or (kind == "cnn" and hp["act"] == "identity"):
        raise RebuildError(f"activation '{hp['act']}' is not one of the generator's")
    if hp["arch"] not in (CNN_ARCHS if kind == "cnn" else MLP_ARCHS):
        raise RebuildError(f"architecture '{hp['arch']}' is not one of the {kind} generator's")
    return hp


def parse_layers(text):
    """The Activations-Params column: a Python literal list of (type, activations, params)."""
    try:
        layers = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError) as e:
        raise RebuildError(f"Activations-Params is not a Python literal list ({type(e).__name__})")
    if not isinstance(layers, list):
        raise RebuildError("Activations-Params is not a list")
    out = []
    for i, t in enumerate(layers):
        if not (isinstance(t, tuple) and len(t) == 3 and isinstance(t[0], str) and isinstance(t[1], int)
                and isinstance(t[2], int) and t[1] >= 0 and t[2] >= 0):
            raise RebuildError(f"Activations-Params entry {i + 1} is not (type, activations, params)")
        out.append(t)
    return out


class Row:
    """One data row: index (0-based data row), filename, kind, measured MiB, status, hyper-parameters
    (None when the filename does not parse: `error` says why), layers (None likewise)."""

    def __init__(self, index, record, kind):
        self.index = index
        self.kind = kind
        self.filename = record.get("Filename", "")
        self.status = record.get("Status") or "SUCCESSFUL"
        try:
            self.measured_mib = int(float(record.get("Max GPU Memory (MiB)", "")))
        except ValueError:
            self.measured_mib = None
        self.error = None
        self.hp = self.layers = None
        try:
            self.hp = parse_filename(self.filename, kind)
            self.layers = parse_layers(record.get("Activations-Params", ""))
            batch_col = record.get("Batch Size")
            if batch_col not in (None, "") and int(batch_col) != self.hp["batch"]:
                raise RebuildError(f"Batch Size column {batch_col} != the filename's batch {self.hp['batch']}")
        except RebuildError as e:
            self.error = str(e)
        except ValueError as e:
            self.error = f"bad row: {e}"

    @property
    def arch(self):
        return self.hp["arch"] if self.hp else None

    @property
    def oom(self):
        return self.status == "OOM_CRASH"


REQUIRED_COLUMNS = ("Filename", "Activations-Params", "Max GPU Memory (MiB)")


def read_rows(path, kind):
    """The rows of a GPUMemNet CSV; ValueError when it lacks a column every row needs (a file of
    something else would otherwise be "probed" as rows that all skip)."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"not a GPUMemNet data set: no column {', '.join(repr(c) for c in missing)}")
        return [Row(i, rec, kind) for i, rec in enumerate(reader)]


# ------------------------------------------------------------------------------------------------
# The generator's modules (cnn.py, mlp_next.py), with the widths and strides given explicitly

class ConvBlock(nn.Module):
    def __init__(self, cin, cout, kernel_size, stride, padding, batch_norm, activation, dropout_rate):
        super().__init__()
        layers = [nn.Conv2d(cin, cout, kernel_size, stride, padding)]
        if batch_norm:
            layers.append(nn.BatchNorm2d(cout))
        layers.append(activation())
        if dropout_rate is not None:
            layers.append(nn.Dropout(dropout_rate))
        self.block = nn.Sequential(*layers)

    def forward(self, x):
        return self.block(x)


class ResidualBlock(nn.Module):
    def __init__(self, conv1, conv2, shortcut):
        super().__init__()
        self.conv1 = conv1
        self.conv2 = conv2
        self.shortcut = shortcut

    def forward(self, x):
        residual = self.shortcut(x)
        x = self.conv1(x)
        x = self.conv2(x)
        return x + residual


class DenseBlock(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)

    def forward(self, x):
        features = [x]
        for layer in self.layers:
            new_feature = layer(torch.cat(features, 1))
            features.append(new_feature)
        return torch.cat(features, 1)


class TransitionBlock(nn.Module):
    def __init__(self, conv):
        super().__init__()
        self.conv = conv
        self.pool = nn.AvgPool2d(2, stride=2)

    def forward(self, x):
        x = self.conv(x)
        if x.size(2) > 1 and x.size(3) > 1:
            x = self.pool(x)
        return x


class CNN(nn.Module):
    def __init__(self, blocks, channels, num_classes):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.global_avg_pool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(channels, num_classes)
        self.final_activation = nn.Softmax(dim=1) if num_classes > 1 else nn.Sigmoid()

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        x = self.global_avg_pool(x)
        x = torch.flatten(x, 1)
        x = self.fc(x)
        return self.final_activation(x)


class MLP(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.model = nn.Sequential(*layers)

    def forward(self, x):
        x = x.view(x.size(0), -1)
        return self.model(x)


# ------------------------------------------------------------------------------------------------
# Rebuilding a CNN row

class _Walk:
    """The row's layers, consumed in order; every step checks what the structure expects."""

    def __init__(self, row):
        self.t = row.layers
        self.pos = 0
        self.hp = row.hp

    def peek(self):
        return self.t[self.pos][0] if self.pos < len(self.t) else None

    def take(self, expected):
        n = self.pos + 1
        if self.pos >= len(self.t):
            raise RebuildError(f"the row ends after {len(self.t)} layers where the structure expects '{expected}'")
        t = self.t[self.pos]
        if t[0] != expected:
            raise RebuildError(f"layer {n}: '{t[0]}' where the {self.hp['arch']} structure expects '{expected}'")
        self.pos += 1
        return t

    def where(self):
        return f"layer {self.pos}"


def _side(acts, what):
    s = math.isqrt(acts)
    if s * s != acts or s == 0:
        raise RebuildError(f"{what}: {acts} activations is not a square H*W")
    return s


def _conv(w, cin, side, k, pad, cout=None):
    """A Conv2d(cin, ?, k, stride, pad) with bias: cout from its params, stride from its H*W."""
    t = w.take("conv2d")
    per = cin * k * k + 1
    if t[2] % per:
        raise RebuildError(f"{w.where()} (conv2d): {t[2]} params is not (cin*{k}*{k}+1)*cout for cin={cin}")
    derived = t[2] // per
    if cout is not None and derived != cout:
        raise RebuildError(f"{w.where()} (conv2d): {t[2]} params gives {derived} output channels, the structure needs {cout}")
    out_side = _side(t[1], f"{w.where()} (conv2d)")
    for stride in (1, 2):
        if (side + 2 * pad - k) // stride + 1 == out_side:
            return derived, stride, out_side
    raise RebuildError(f"{w.where()} (conv2d): output {out_side}x{out_side} from {side}x{side} is neither stride 1 nor 2")


def _conv_block(w, cin, side, k, pad, act_name, dropout, cout=None):
    """ConvBlock: conv [BatchNorm2d] activation [Dropout]. Returns (block, cout, stride, side)."""
    hp = w.hp
    cout, stride, side_out = _conv(w, cin, side, k, pad, cout)
    acts = side_out * side_out
    if hp["batchnorm"]:
        bn = w.take("batch_norm2d")
        if bn[2] != 2 * cout or bn[1] != acts:
            raise RebuildError(f"{w.where()} (batch_norm2d): ({bn[1]}, {bn[2]}) is not ({acts}, 2 x {cout})")
    act_cls = ACTIVATIONS[act_name]
    a = w.take(act_cls.__name__)
    if a[1] != acts:
        raise RebuildError(f"{w.where()} ({a[0]}): {a[1]} activations, its conv's output has {acts}")
    if dropout:
        d = w.take("dropout")
        if d[1] != acts:
            raise RebuildError(f"{w.where()} (dropout): {d[1]} activations, its conv's output has {acts}")
    block = ConvBlock(cin, cout, k, stride, pad, hp["batchnorm"], act_cls, hp["dropout_rate"] if dropout else None)
    return block, cout, stride, side_out


def _cnn_chain(w, c, side):
    blocks = []
    if w.peek() != "conv2d":
        raise RebuildError(f"the row starts with '{w.peek()}', a {w.hp['arch']} network starts with conv2d")
    while w.peek() == "conv2d":
        block, c, stride, side = _conv_block(w, c, side, 3, 1, w.hp["act"], w.hp["dropout"])
        if stride != 1:
            raise RebuildError(f"{w.where()}: a strided conv in a {w.hp['arch']} network (its ConvBlocks have stride 1)")
        blocks.append(block)
    return blocks, c, side


def _cnn_residual(w, c, side):
    hp = w.hp
    blocks = []
    if w.peek() not in ("conv2d", "Identity"):
        raise RebuildError(f"the row starts with '{w.peek()}', a residual block starts with its shortcut")
    while w.peek() in ("conv2d", "Identity"):
        cin = c
        if w.peek() == "Identity":  # shortcut = nn.Identity(): in == out channels, stride 1
            t = w.take("Identity")
            if t[1] != side * side:
                raise RebuildError(f"{w.where()} (Identity shortcut): {t[1]} activations, its input has {side * side}")
            shortcut, cout, sc_stride = nn.Identity(), cin, 1
        else:  # Sequential(Conv2d 1x1 stride s, BatchNorm2d or Identity)
            cout, sc_stride, sc_side = _conv(w, cin, side, 1, 0)
            tail = w.take("batch_norm2d" if hp["batchnorm"] else "Identity")
            if tail[1] != sc_side * sc_side or (hp["batchnorm"] and tail[2] != 2 * cout):
                raise RebuildError(f"{w.where()} ({tail[0]} after the shortcut conv): ({tail[1]}, {tail[2]}) does not fit "
                                   f"{cout} channels of {sc_side}x{sc_side}")
            shortcut = nn.Sequential(nn.Conv2d(cin, cout, kernel_size=1, stride=sc_stride),
                                     nn.BatchNorm2d(cout) if hp["batchnorm"] else nn.Identity())
        conv1, _, stride, side1 = _conv_block(w, cin, side, 3, 1, hp["act"], hp["dropout"], cout)
        if stride != sc_stride:
            raise RebuildError(f"{w.where()}: conv1 has stride {stride}, its shortcut {sc_stride}")
        if isinstance(shortcut, nn.Identity) and (cout != cin or stride != 1):
            raise RebuildError(f"{w.where()}: an Identity shortcut around a block that changes the shape")
        conv2, _, stride2, side = _conv_block(w, cout, side1, 3, 1, hp["act"], hp["dropout"], cout)
        if stride2 != 1:
            raise RebuildError(f"{w.where()}: a residual block's conv2 has stride 1")
        blocks.append(ResidualBlock(conv1, conv2, shortcut))
        c = cout
    return blocks, c, side


def _cnn_dense(w, c, side):
    hp = w.hp
    blocks = []
    after_block = False
    if w.peek() != "conv2d":
        raise RebuildError(f"the row starts with '{w.peek()}', a dense network starts with conv2d")
    while w.peek() == "conv2d":
        params = w.t[w.pos][2]
        if after_block and params == (c + 1) * (c // 2):
            # TransitionBlock: ConvBlock(c, c // 2, kernel 1, padding 0) with the ConvBlock defaults
            # (ReLU, no dropout), then AvgPool2d(2, 2) when H, W > 1 (logged as 'd').
            conv, c, stride, side = _conv_block(w, c, side, 1, 0, "relu", False, c // 2)
            if stride != 1:
                raise RebuildError(f"{w.where()}: a strided transition conv")
            if side > 1:
                p = w.take("d")
                if p[1] != (side // 2) ** 2:
                    raise RebuildError(f"{w.where()} (AvgPool2d 'd'): {p[1]} activations, a 2x2 pool of {side}x{side} gives {(side // 2) ** 2}")
                side //= 2
            elif w.peek() == "d":
                raise RebuildError(f"layer {w.pos + 1}: a transition pool of a 1x1 map (the generator skips it)")
            blocks.append(TransitionBlock(conv))
            after_block = False
            continue
        layers = []
        growth = None
        for i in range(DENSE_LAYERS):
            if w.peek() != "conv2d":
                raise RebuildError(f"layer {w.pos + 1}: a dense block ends after {i} of its {DENSE_LAYERS} ConvBlocks")
            block, g, stride, s = _conv_block(w, c + i * (growth or 0), side, 3, 1, hp["act"], hp["dropout"], growth)
            if stride != 1 or s != side:
                raise RebuildError(f"{w.where()}: a dense layer changes the spatial size")
            growth = g
            layers.append(block)
        if growth != DENSE_GROWTH:
            raise RebuildError(f"dense block {len(blocks) + 1}: growth rate {growth}, the generator's is {DENSE_GROWTH}")
        blocks.append(DenseBlock(layers))
        c += DENSE_LAYERS * growth
        after_block = True
    return blocks, c, side


def _cnn_head(w, c, side):
    """AdaptiveAvgPool2d((1, 1)), Linear(c, classes), Softmax(dim=1) (Sigmoid with one class: the
    cleaner drops it) -- and nothing after."""
    classes = w.hp["num_classes"]
    p = w.take("adaptive_avg_pool2d")
    if p[1] != 1:
        raise RebuildError(f"{w.where()} (adaptive_avg_pool2d): {p[1]} activations, the generator pools to 1x1")
    fc = w.take("linear")
    if fc[1] != classes or fc[2] != (c + 1) * classes:
        raise RebuildError(f"{w.where()} (linear): ({fc[1]}, {fc[2]}) is not Linear({c}, {classes}) = ({classes}, {(c + 1) * classes})")
    if classes > 1:
        w.take("Softmax")
    if w.pos != len(w.t):
        raise RebuildError(f"layer {w.pos + 1}: '{w.t[w.pos][0]}' after the head")


def build_cnn(row):
    """The row's network as an nn.Module with meta parameters. Raises RebuildError."""
    if row.error:
        raise RebuildError(row.error)
    hp = row.hp
    c, side = hp["input_channels"], hp["input_size"]
    if not row.layers:
        _empty_cnn_row(row)
        with torch.no_grad(), MetaInit():
            return CNN([], c, hp["num_classes"])
    w = _Walk(row)
    with torch.no_grad(), MetaInit():
        if hp["arch"] == "residual":
            blocks, c, side = _cnn_residual(w, c, side)
        elif hp["arch"] == "dense":
            blocks, c, side = _cnn_dense(w, c, side)
        else:
            blocks, c, side = _cnn_chain(w, c, side)
        _cnn_head(w, c, side)
        return CNN(blocks, c, hp["num_classes"])


def _empty_cnn_row(row):
    """Why a row lists no layers, and whether the generator's own code says what the network was."""
    hp = row.hp
    if hp["input_size"] < 7:
        raise RebuildError(f"input_size {hp['input_size']} < 7: the generator's math.log2(input_size // 7) raised "
                           f"before the network was built (nothing ran on the GPU; measured {row.measured_mib} MiB)")
    if (hp["arch"] == "dense" and hp["depth"] // 4 == 0) or (hp["arch"] == "residual" and hp["depth"] // 2 == 0):
        return  # no block: AdaptiveAvgPool2d, Linear(input_channels, classes), Softmax -- no activation
        # layer, so the cleaner's most_frequent_activation_function([]) raised and it wrote []
    raise RebuildError("the row lists no layers (the cleaner could not read the run's summary)")


# ------------------------------------------------------------------------------------------------
# Rebuilding an MLP row

def build_mlp(row):
    """The row's network (mlp_next.py's MLP) as an nn.Module with meta parameters. Raises RebuildError."""
    if row.error:
        raise RebuildError(row.error)
    hp = row.hp
    t = row.layers
    linears = [i for i, x in enumerate(t) if x[0] == "linear"]
    if not linears:
        raise RebuildError("the row lists no linear layer")
    last = linears[-1]
    act_cls = ACTIVATIONS[hp["act"]]
    layers = []
    width = hp["input"]
    w = _Walk(row)
    with torch.no_grad(), MetaInit():
        while w.pos < last:
            fc = w.take("linear")
            out = fc[1]
            if out <= 0 or fc[2] != (width + 1) * out:
                raise RebuildError(f"{w.where()} (linear): {fc[2]} params is not Linear({width}, {out})")
            layers.append(nn.Linear(width, out))
            width = out
            if hp["batchnorm"]:
                bn = w.take("batch_normalization")
                if bn[1] != width or bn[2] != 2 * width:
                    raise RebuildError(f"{w.where()} (batch_normalization): ({bn[1]}, {bn[2]}) is not BatchNorm1d({width})")
                layers.append(nn.BatchNorm1d(width))
            a = w.take(act_cls.__name__)
            if a[1] != width:
                raise RebuildError(f"{w.where()} ({a[0]}): width {a[1]}, its linear's is {width}")
            layers.append(act_cls())
            if hp["dropout"]:
                d = w.take("dropout")
                if d[1] != width:
                    raise RebuildError(f"{w.where()} (dropout): width {d[1]}, its linear's is {width}")
                layers.append(nn.Dropout(hp["dropout_rate"]))
        out = hp["output"]
        fc = w.take("linear")
        if fc[1] != out or fc[2] != (width + 1) * out:
            raise RebuildError(f"{w.where()} (linear): ({fc[1]}, {fc[2]}) is not the output layer Linear({width}, {out})")
        layers.append(nn.Linear(width, out))
        # Softmax(dim=1) for several outputs; one output: Sigmoid or Identity, the generator's coin.
        heads = {"Softmax": lambda: nn.Softmax(dim=1)} if out > 1 else {"Sigmoid": nn.Sigmoid, "Identity": nn.Identity}
        head = w.peek()
        if head not in heads:
            raise RebuildError(f"layer {w.pos + 1}: '{head}' after the output layer, the generator has {' or '.join(heads)}")
        h = w.take(head)
        if h[1] != out:
            raise RebuildError(f"{w.where()} ({head}): width {h[1]}, the output is {out}")
        layers.append(heads[head]())
        if w.pos != len(t):
            raise RebuildError(f"layer {w.pos + 1}: '{t[w.pos][0]}' after the head")
        return MLP(layers)


# ------------------------------------------------------------------------------------------------
# Verification: the rebuilt module summarised as torchsummary + the cleaner saw it

def summarise(module, kind, shape):
    """The (type, activations, params) list the GPUMemNet cleaner would have written for `module`
    (torchsummary: forward hooks on every module but containers, in the order their forwards end;
    a meta-device forward of two samples)."""
    out = []
    hooks = []

    def hook(m, inp, output):
        name = type(m).__name__
        params = sum(p.numel() for k, p in m.named_parameters(recurse=False) if k in ("weight", "bias"))
        dims = tuple(output.shape)
        if kind == "mlp":
            typ = {"Linear": "linear", "BatchNorm1d": "batch_normalization", "Dropout": "dropout"}.get(name, name)
            out.append((typ, dims[-1], params if typ in ("linear", "batch_normalization") else 0))
            return
        hw = dims[2] * dims[3] if len(dims) == 4 else None
        if name == "Conv2d":
            out.append(("conv2d", hw, params))
        elif name == "BatchNorm2d":
            out.append(("batch_norm2d", hw, params))
        elif name == "Dropout":
            out.append(("dropout", hw, 0))
        elif name == "AdaptiveAvgPool2d":
            out.append(("adaptive_avg_pool2d", hw, 0))
        elif name == "Linear":
            out.append(("linear", dims[1], params))
        elif name == "Softmax":
            out.append(("Softmax", 0, 0))
        elif hw is not None:  # the cleaner's generic branch: letters before '-N' ('AvgPool2d-7' -> 'd')
            out.append((re.findall(r"([A-Za-z]+)$", name)[0], hw, 0))
        # a module with a 2-D output that is none of the above (the Sigmoid head) is skipped

    for m in module.modules():
        if not isinstance(m, (nn.Sequential, nn.ModuleList)) and m is not module and not list(m.children()):
            hooks.append(m.register_forward_hook(hook))
    try:
        with torch.no_grad():
            module(torch.empty((2,) + tuple(shape), device="meta"))
    finally:
        for h in hooks:
            h.remove()
    return out


def input_shape(row):
    hp = row.hp
    return (hp["input_channels"], hp["input_size"], hp["input_size"]) if row.kind == "cnn" else (hp["input"],)


def verify(row, module):
    """Refuses a rebuilt module whose summary differs from the row in any layer."""
    got = summarise(module, row.kind, input_shape(row))
    want = [tuple(t) for t in row.layers]
    for i, (a, b) in enumerate(zip(got, want)):
        if a != b:
            raise RebuildError(f"layer {i + 1}: rebuilt as {a}, the row lists {b}")
    if len(got) != len(want):
        raise RebuildError(f"rebuilt with {len(got)} summary layers, the row lists {len(want)}")


def rebuild(row):
    """(module, layers_from) for a row that rebuilds exactly; raises RebuildError with the reason."""
    module = build_cnn(row) if row.kind == "cnn" else build_mlp(row)
    if row.layers:
        verify(row, module)
        return module, "row"
    return module, "generator"


def prelu_params(module):
    return sum(p.numel() for m in module.modules() if isinstance(m, nn.PReLU) for p in m.parameters())


# ------------------------------------------------------------------------------------------------
# The generator's formulas, as a cross-check of the rebuilt widths (cnn.py CNN.__init__)

def generator_chain_widths(arch, depth, base):
    """Output channels of each ConvBlock of a non-residual, non-dense cnn.py network."""
    out = []
    contracting = depth // 2
    expanding = depth - contracting
    for i in range(depth):
        if arch == "pyramid":
            g = (MAX_FILTERS / base) ** (1 / depth)
            c = min(int(base * (g ** i)), MAX_FILTERS)
        elif arch == "reverse_pyramid":
            g = (MAX_FILTERS / base) ** (1 / depth)
            c = max(int(base / (g ** i)), 1)
        elif arch == "bottleneck":
            g = 2 if depth <= 2 else (MAX_FILTERS / base) ** (1 / (depth - 1))
            c = base * 2 if i == 0 else min(int(base * (g ** (i - 1))), MAX_FILTERS)
        elif arch == "gradual":
            g = (MAX_FILTERS / base) ** (1 / (2 * depth))
            c = min(int(base * (g ** i)), MAX_FILTERS)
        elif arch == "hourglass":
            if i < contracting:
                g = (MAX_FILTERS / base) ** (1 / contracting)
                c = min(int(base * (g ** i)), MAX_FILTERS)
            else:
                s = (MAX_FILTERS / base) ** (1 / expanding)
                c = max(int(base * (s ** (depth - i - 1))), base)
        elif arch == "uniform":
            c = base
        else:
            raise ValueError(arch)
        out.append(c)
    return out


def generator_residual_blocks(depth, base, input_size):
    """(out_channels, stride) of each ResidualBlock cnn.py builds."""
    out = []
    size = input_size
    g = (MAX_FILTERS / base) ** (1 / depth)
    for i in range(depth // 2):
        c = min(int(base * (g ** i)), MAX_FILTERS)
        stride = 2 if i % 2 == 1 and size > 7 else 1
        out.append((c, stride))
        if stride == 2:
            size //= 2
        if size <= 7:
            break
    return out


def generator_dense_transitions(depth, input_size):
    """The dense blocks followed by a transition, for each of cnn.py's two pooling frequencies (a coin
    flip: ceil(depth / poolings needed) or 5)."""
    blocks = depth // 4
    poolings = max(1, int(math.log2(input_size // 7)))
    out = []
    for freq in (max(1, math.ceil(depth / poolings)), 5):
        out.append([i for i in range(blocks) if i % freq == 0 and i != blocks - 1])
    return out


def generator_mlp_widths(arch, depth, features, outputs):
    """Hidden widths of mlp_next.py's MLP."""
    out = []
    width = features
    if arch in ("pyramid", "bottleneck"):
        for _ in range(depth + (arch == "bottleneck")):
            width = max(int(width * 0.5), outputs)
            out.append(width)
    elif arch == "uniform":
        out = [features] * depth
    elif arch == "gradual":
        dec = (features - outputs) // depth
        for _ in range(depth):
            width = max(width - dec, outputs)
            out.append(width)
    return out


def generator_check(row, module):
    """None when the rebuilt widths are what the generators' formulas give for the filename's
    hyper-parameters, else the difference (a diagnostic, not a reason to refuse the row)."""
    if not row.layers:
        return None
    hp = row.hp
    if row.kind == "mlp":
        want = generator_mlp_widths(hp["arch"], hp["depth"], hp["input"], hp["output"])
        got = [m.out_features for m in module.model if isinstance(m, nn.Linear)][:-1]
        return None if got == want else f"rebuilt widths {got}, the generator's formulas give {want}"
    blocks = list(module.blocks)
    if hp["arch"] == "residual":
        want = generator_residual_blocks(hp["depth"], hp["base_filters"], hp["input_size"])
        got = [(b.conv1.block[0].out_channels, b.conv1.block[0].stride[0]) for b in blocks]
    elif hp["arch"] == "dense":
        dense = [b for b in blocks if isinstance(b, DenseBlock)]
        if len(dense) != hp["depth"] // 4:
            return f"{len(dense)} dense blocks, the generator builds {hp['depth'] // 4}"
        got, n = [], -1
        for b in blocks:
            n += isinstance(b, DenseBlock)
            if isinstance(b, TransitionBlock):
                got.append(n)
        want = generator_dense_transitions(hp["depth"], hp["input_size"])
        return None if got in want else f"transitions after dense blocks {got}, the generator's {' or '.join(map(str, want))}"
    else:
        want = generator_chain_widths(hp["arch"], hp["depth"], hp["base_filters"])
        got = [b.block[0].out_channels for b in blocks]
    return None if got == want else f"rebuilt {got}, the generator's formulas give {want}"


# ------------------------------------------------------------------------------------------------
# Training as the generator did

def _bce_with_logits_loss(output, batch):
    """mlp_next.py with one output: labels.view(-1, 1).float() (a new GPU tensor), BCEWithLogitsLoss."""
    labels = batch[1].view(-1, 1).float()
    return torch.nn.functional.binary_cross_entropy_with_logits(output, labels)


def _cross_entropy_loss(output, batch):
    """CrossEntropyLoss(outputs, labels) on the Softmax output, as both generators."""
    return torch.nn.functional.cross_entropy(output, batch[1])


def loss_fn(row):
    if row.kind == "mlp" and row.hp["output"] == 1:
        return _bce_with_logits_loss
    if row.kind == "cnn" and row.hp["num_classes"] == 1:
        raise RebuildError("num_classes 1: the generator's BCELoss(outputs [B,1], long labels [B]) raises a size "
                           "mismatch after the first forward, so the measured figure is one forward pass, not training")
    return _cross_entropy_loss


def input_fn(row):
    """(x, labels) per batch: torch.randn inputs of the row's shape, int64 class labels."""
    shape = input_shape(row)

    def make(batch):
        x = torch.empty((batch,) + shape, dtype=torch.float32, device="meta")
        y = torch.empty((batch,), dtype=torch.long, device="meta")
        return (x, y)
    return make


def summary_pass(row):
    """torchsummary.summary(model, input_size, device='cuda') before training: torch.rand(2, *shape)
    copied to the GPU and one forward with autograd on; nothing is kept (MLP: input_size=(1, features))."""
    shape = (1,) + input_shape(row) if row.kind == "mlp" else input_shape(row)

    def run(model):
        x = torch.rand((2,) + shape, device="cuda")
        model(x)
    return run


def spec(row):
    """(ModelSpec, layers_from) for the probe, or RebuildError."""
    module, layers_from = rebuild(row)
    return ModelSpec(module, None, loss_fn(row), f"gpumemnet-{row.kind}:{row.index}"), layers_from


# ------------------------------------------------------------------------------------------------
# Batch mode

def probe_row(row, out_dir, optimizer="adam", foreach=True, steps=2, summary=True):
    """Rebuilds and probes one row; returns its index record (never raises for a bad row)."""
    from . import TRACE_VERSION, __version__
    from . import tensor as pt
    from .train import run_probe
    t0 = time.perf_counter()
    rec = {"row": row.index, "filename": row.filename, "kind": row.kind, "arch": row.arch,
           "measured_mib": row.measured_mib, "oom": row.oom}
    try:
        model, layers_from = spec(row)
        rec["layers_from"] = layers_from
        rec["params"] = sum(p.numel() for p in model.module.parameters())
        note = generator_check(row, model.module)
        if note:
            rec["note"] = "generator formulas differ: " + note
    except RebuildError as e:
        rec.update(status="skipped", reason=str(e), seconds=round(time.perf_counter() - t0, 3))
        return rec
    except Exception as e:  # a bug or an unexpected row: the run goes on
        rec.update(status="skipped", reason=f"rebuild failed: {type(e).__name__}: {e}",
                   seconds=round(time.perf_counter() - t0, 3))
        return rec
    trace = f"{row.index}.trace"
    shape = input_shape(row)
    header = {"model": model.source, "filename": row.filename, "batch": row.hp["batch"], "optimizer": optimizer,
              "amp": "none", "checkpointing": False, "set_to_none": True, "foreach": "on" if foreach else "off",
              "input": list(shape), "data_parallel": 1, "dtype": "float32", "steps": steps,
              "summary_pass": summary, "torch": torch.__version__, "probe": __version__,
              "trace_version": TRACE_VERSION}
    opts = {"model": model, "batch": row.hp["batch"], "optimizer": optimizer, "foreach": foreach, "amp": "none",
            "checkpointing": False, "set_to_none": True, "steps": steps, "out": os.path.join(out_dir, trace),
            "header": header, "input_shape": shape, "data_parallel": 1, "input_fn": input_fn(row),
            "prelude": summary_pass(row) if summary else None}
    pt.CPU_FALLBACKS.clear()  # per row: the footer lists this row's fallbacks only
    try:
        w = run_probe(opts)
    except Exception as e:
        try:
            os.unlink(opts["out"])
        except OSError:
            pass
        rec.update(status="skipped", reason=f"probe failed: {reason(e)}",
                   seconds=round(time.perf_counter() - t0, 3))
        return rec
    rec.update(status="ok", trace=trace, peak_live_mib=round(w.peak / 2**20, 1),
               seconds=round(time.perf_counter() - t0, 3))
    if pt.CPU_FALLBACKS:
        rec["cpu_fallbacks"] = dict(pt.CPU_FALLBACKS)
    return rec


def select(rows, matching=None, indices=None, limit=None):
    out = [r for r in rows if (matching is None or matching in r.filename) and (indices is None or r.index in indices)]
    return out[:limit] if limit is not None else out


def run_batch(rows, out_dir, optimizer="adam", foreach=True, steps=2, summary=True, progress=None):
    """Probes `rows` one after the other, writing out_dir/<i>.trace and out_dir/index.jsonl (a line
    per row, flushed as it is written). Returns the records."""
    os.makedirs(out_dir, exist_ok=True)
    records = []
    t0 = time.perf_counter()
    with open(os.path.join(out_dir, "index.jsonl"), "w") as index:
        for n, row in enumerate(rows, 1):
            rec = probe_row(row, out_dir, optimizer, foreach, steps, summary)
            index.write(json.dumps(rec, sort_keys=True) + "\n")
            index.flush()
            records.append(rec)
            if progress is not None and (n % 50 == 0 or n == len(rows)):
                ok = sum(r["status"] == "ok" for r in records)
                elapsed = time.perf_counter() - t0
                eta = elapsed / n * (len(rows) - n)
                progress.write(f"colo_probe.gpumemnet: {n}/{len(rows)} rows, {ok} probed, "
                               f"{elapsed:.0f} s elapsed, ETA {eta:.0f} s\n")
                progress.flush()
    return records


def _fail(code, msg):
    sys.stderr.write("colo_probe.gpumemnet: error: " + " ".join(str(msg).split()) + "\n")
    sys.exit(code)


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        _fail(2, message)


def main(argv=None):
    from .train import OPTIMIZERS
    p = _Parser(prog="python3 -m colo_probe.gpumemnet",
                description="Rebuild GPUMemNet data set rows as PyTorch modules and record their probe traces.")
    p.add_argument("--csv", required=True, help="cnn.csv or mlp.csv of the GPUMemNet data set")
    p.add_argument("--kind", required=True, choices=KINDS)
    p.add_argument("--out-dir", required=True, help="where <row>.trace and index.jsonl are written")
    p.add_argument("--optimizer", choices=OPTIMIZERS, default="adam", help="the generator's is adam")
    p.add_argument("--foreach", choices=("on", "off"), default="on")
    p.add_argument("--steps", type=int, default=2, choices=range(1, 9), metavar="1..8")
    p.add_argument("--limit", type=int, default=None, help="probe at most N of the selected rows")
    p.add_argument("--rows-matching", default=None, metavar="SUBSTR", help="only rows whose filename contains SUBSTR")
    p.add_argument("--rows", default=None, metavar="I,J,...", help="only these 0-based data rows")
    p.add_argument("--no-summary-pass", action="store_true",
                   help="leave out torchsummary's two-sample forward before training")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    if args.limit is not None and args.limit < 0:
        _fail(2, "--limit must be >= 0")
    indices = None
    if args.rows:
        try:
            indices = {int(x) for x in args.rows.split(",") if x.strip()}
        except ValueError:
            _fail(2, f"--rows '{args.rows}': expected comma-separated row numbers")
    torch.set_num_threads(1)
    try:
        rows = read_rows(args.csv, args.kind)
    except (OSError, csv.Error, UnicodeDecodeError, ValueError) as e:
        _fail(1, f"{args.csv}: {e}")
    if os.path.exists(args.out_dir) and not os.path.isdir(args.out_dir):
        _fail(2, f"--out-dir {args.out_dir}: exists and is not a directory")
    rows = select(rows, args.rows_matching, indices, args.limit)
    t0 = time.perf_counter()
    try:
        records = run_batch(rows, args.out_dir, args.optimizer, args.foreach == "on", args.steps,
                            not args.no_summary_pass, None if args.quiet else sys.stderr)
    except OSError as e:  # the directory cannot be created or written
        _fail(1, f"--out-dir {args.out_dir}: {e.strerror or e}")
    if not args.quiet:
        ok = sum(r["status"] == "ok" for r in records)
        sys.stderr.write(f"colo_probe.gpumemnet: {ok} of {len(records)} rows probed, {len(records) - ok} skipped, "
                         f"{time.perf_counter() - t0:.1f} s; index: {os.path.join(args.out_dir, 'index.jsonl')}\n")


if __name__ == "__main__":
    main()
