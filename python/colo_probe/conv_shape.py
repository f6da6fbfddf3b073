"""A convolution's shape key: what cuDNN's algorithm choice (and so its workspace) depends on, as
one token without spaces. Keys name the rows of a GPU's measured workspace table
(scripts/gpu-conv-workspace.py measures them; the `trace` replay looks them up).

    f:128x64x56x56:64x64x3x3:s1x1:p1x1:d1x1:g1:t0:float32:b1     forward, with bias
    b:128x64x56x56:64x64x3x3:s1x1:p1x1:d1x1:g1:t0:float32:m011   backward, output_mask (input, weight, bias)

Fields: pass (f/b), input shape, weight shape, stride, padding, dilation, groups, transposed (t0, or
t1 followed by the output padding: t1o0x0), the dtype the convolution runs in (after autocast),
then bias (forward) or output_mask (backward). The batch is part of the input shape."""


def _dims(v):
    return "x".join(str(int(x)) for x in v)


def _dtype(t):
    return str(t.dtype).replace("torch.", "")


def conv_key(name, pairs):
    """name: 'aten::convolution', 'aten::_convolution' or 'aten::convolution_backward'; pairs: the
    operator's arguments by name. None when an argument is missing or not a tensor."""
    import torch
    inp, weight = pairs.get("input"), pairs.get("weight")
    if not isinstance(inp, torch.Tensor) or not isinstance(weight, torch.Tensor):
        return None
    transposed = bool(pairs.get("transposed", False))
    t = "t1o" + _dims(pairs.get("output_padding") or [0]) if transposed else "t0"
    parts = ["b" if name == "aten::convolution_backward" else "f", _dims(inp.shape), _dims(weight.shape),
             "s" + _dims(pairs.get("stride") or [1]), "p" + _dims(pairs.get("padding") or [0]),
             "d" + _dims(pairs.get("dilation") or [1]), "g%d" % int(pairs.get("groups", 1)), t, _dtype(inp)]
    if name == "aten::convolution_backward":
        parts.append("m" + "".join("1" if m else "0" for m in (pairs.get("output_mask") or [])))
    else:
        parts.append("b1" if isinstance(pairs.get("bias"), torch.Tensor) else "b0")
    return ":".join(parts)


def parse_key(key):
    """The key's fields as a dict (what the GPU measurement rebuilds the call from); ValueError on
    a malformed key."""
    p = key.split(":")
    if len(p) != 10 or p[0] not in ("f", "b"):
        raise ValueError(f"malformed convolution key '{key}'")

    def dims(s, prefix=""):
        if not s.startswith(prefix):
            raise ValueError(f"malformed convolution key '{key}': field '{s}'")
        return [int(x) for x in s[len(prefix):].split("x")]
    out = {"pass": "backward" if p[0] == "b" else "forward", "input": dims(p[1]), "weight": dims(p[2]),
           "stride": dims(p[3], "s"), "padding": dims(p[4], "p"), "dilation": dims(p[5], "d"),
           "groups": int(p[6][1:]), "dtype": p[8]}
    if p[7] == "t0":
        out["transposed"], out["output_padding"] = False, [0] * len(out["stride"])
    else:
        out["transposed"], out["output_padding"] = True, dims(p[7], "t1o")
    if p[0] == "b":
        out["output_mask"] = [c == "1" for c in p[9][1:]]
    else:
        out["bias"] = p[9] == "b1"
    return out
