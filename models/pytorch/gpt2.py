"""GPT-2 for causal language modelling in plain PyTorch, as CARMA's workloads/gpt2_large_on_wiki.py
and gpt2_xl_on_wiki.py train it (Hugging Face `GPT2LMHeadModel(GPT2Config(...))` from scratch, no
`transformers` needed here):

    python3 -m colo_probe --model models/pytorch/gpt2.py:gpt2_large --input 512 --batch 8 \
        --optimizer adamw --data-parallel 2          # gpt2_large_2: torch.nn.DataParallel, 2 GPUs
    python3 -m colo_probe --model models/pytorch/gpt2.py:gpt2_xl --input 512 --batch 2 --optimizer adamw

Configuration (the scripts' GPT2Config): vocab 50,257, 1,024 positions, gelu_new, LayerNorm eps 1e-5,
embedding / attention / residual dropout 0.1, use_cache=True; large: 36 layers, n_embd 1280, 20 heads;
XL: 48 layers, 1600, 25 heads; MLP width 4 x n_embd. The LM head is tied to the token embedding:
unique parameters large 774,030,080, XL 1,557,611,200 (the GPT2Model totals of CARMA's summaries).
Each attention block has Hugging Face's bool causal-mask buffer `bias` [1, 1, 1024, 1024] (1 MiB; the
summaries count it as 'non-trainable').

Hugging Face details kept because they cost memory:
  * Conv1D layers (weight [in, out], `addmm(bias, x2d, weight)`).
  * gelu_new (NewGELUActivation) is the explicit tanh formula, whose intermediates autograd saves.
  * GPT2SdpaAttention (the summaries name it): q, k, v are [B, H, S, D] views of the c_attn output;
    `scaled_dot_product_attention(q, k, v, attn_mask=[B,1,S,S] float mask, dropout_p=0.1)` (see
    bert.py's header for how a model file calls SDPA on PyTorch 1.13, 2.x and under the probe).
  * The padding mask: the wikitext lines are padded to 512 with EOS, so every batch has padding and
    Hugging Face builds the causal + padding [B, 1, S, S] float mask (and `_unmask_unattended` on CUDA).
  * use_cache=True also in training: the output carries `past_key_values`, each layer's (key, value)
    views of its c_attn output. They keep those outputs alive as long as `outputs` lives (the script
    keeps it until the next iteration), and torch.nn.DataParallel gathers them onto GPU 0.
  * The loss is computed inside forward (labels=input_ids, the same tensor): shift_logits =
    logits[..., :-1, :].contiguous() (a copy), cross-entropy over the vocabulary in float32.
The scripts' optimizer is `transformers.AdamW` (a per-parameter loop, no multi-tensor kernels)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 50257
POSITIONS = 1024
SEQ_LEN = 512        # tokenizer(..., padding='max_length', truncation=True, max_length=512)


def _sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False):
    fn = getattr(F, "scaled_dot_product_attention", None)
    if fn is not None:
        return fn(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal)
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if is_causal:
        s = q.shape[-2]
        causal = torch.ones(s, s, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
    if attn_mask is not None:
        scores = scores + attn_mask
    probs = F.dropout(torch.softmax(scores, dim=-1), p=dropout_p, training=dropout_p > 0)
    return torch.matmul(probs, v)


class GPT2Config:
    def __init__(self, layers, embd, heads, vocab=VOCAB, positions=POSITIONS, dropout=0.1, eps=1e-5):
        self.layers, self.embd, self.heads = layers, embd, heads
        self.vocab, self.positions, self.dropout, self.eps = vocab, positions, dropout, eps


class Conv1D(nn.Module):
    """transformers.pytorch_utils.Conv1D: a linear layer with its weight stored [in, out]."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class NewGELUActivation(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2SdpaAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_dim, self.heads, self.head_dim = c.embd, c.heads, c.embd // c.heads
        self.register_buffer("bias", torch.tril(torch.ones((c.positions, c.positions), dtype=torch.bool))
                             .view(1, 1, c.positions, c.positions), persistent=False)
        self.c_attn = Conv1D(3 * c.embd, c.embd)
        self.c_proj = Conv1D(c.embd, c.embd)
        self.attn_dropout = nn.Dropout(c.dropout)
        self.resid_dropout = nn.Dropout(c.dropout)

    def _split_heads(self, x):
        return x.view(x.size()[:-1] + (self.heads, self.head_dim)).permute(0, 2, 1, 3)

    def forward(self, hidden, attention_mask):
        bsz, q_len, _ = hidden.size()
        query, key, value = self.c_attn(hidden).split(self.embed_dim, dim=2)
        query, key, value = self._split_heads(query), self._split_heads(key), self._split_heads(value)
        present = (key, value)
        out = _sdpa(query, key, value, attn_mask=attention_mask,
                    dropout_p=self.attn_dropout.p if self.training else 0.0,
                    is_causal=attention_mask is None and q_len > 1)
        out = out.transpose(1, 2).contiguous().view(bsz, q_len, self.embed_dim)
        return self.resid_dropout(self.c_proj(out)), present


class GPT2MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = Conv1D(4 * c.embd, c.embd)
        self.c_proj = Conv1D(c.embd, 4 * c.embd)
        self.act = NewGELUActivation()
        self.dropout = nn.Dropout(c.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class GPT2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c.embd, eps=c.eps)
        self.attn = GPT2SdpaAttention(c)
        self.ln_2 = nn.LayerNorm(c.embd, eps=c.eps)
        self.mlp = GPT2MLP(c)

    def forward(self, hidden, attention_mask):
        attn, present = self.attn(self.ln_1(hidden), attention_mask)
        hidden = attn + hidden
        hidden = hidden + self.mlp(self.ln_2(hidden))
        return hidden, present


def _causal_padding_mask(attention_mask, dtype):
    """_prepare_4d_causal_attention_mask_for_sdpa for a padded batch: AttentionMaskConverter.to_4d
    (causal mask, expanded padding mask, combined) and, on CUDA, _unmask_unattended."""
    bsz, seq = attention_mask.shape
    device = attention_mask.device
    min_v = torch.finfo(dtype).min
    causal = torch.full((seq, seq), min_v, device=device)
    cond = torch.arange(seq, device=device)
    causal.masked_fill_(cond < (cond + 1).view(seq, 1), 0)
    causal = causal.to(dtype)[None, None, :, :].expand(bsz, 1, seq, seq)
    expanded = attention_mask[:, None, None, :].expand(bsz, 1, seq, seq).to(dtype)
    inverted = 1.0 - expanded
    del expanded
    padding = inverted.masked_fill(inverted.to(torch.bool), min_v)
    del inverted
    mask = causal.masked_fill(padding.bool(), min_v)
    del padding, causal
    return mask.mul(~torch.all(mask == min_v, dim=-1, keepdim=True))


class GPT2Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte = nn.Embedding(c.vocab, c.embd)
        self.wpe = nn.Embedding(c.positions, c.embd)
        self.drop = nn.Dropout(c.dropout)
        self.h = nn.ModuleList(GPT2Block(c) for _ in range(c.layers))
        self.ln_f = nn.LayerNorm(c.embd, eps=c.eps)

    def forward(self, input_ids, attention_mask=None):
        bsz, seq = input_ids.shape
        position_ids = torch.arange(0, seq, dtype=torch.long, device=input_ids.device).unsqueeze(0)
        hidden = self.wte(input_ids) + self.wpe(position_ids)
        mask = _causal_padding_mask(attention_mask, hidden.dtype) if attention_mask is not None else None
        hidden = self.drop(hidden)
        presents = ()
        for block in self.h:
            hidden, present = block(hidden, mask)
            presents = presents + (present,)
        return self.ln_f(hidden), presents


class GPT2LMHeadModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.transformer = GPT2Model(c)
        self.lm_head = nn.Linear(c.embd, c.vocab, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tie_weights()

    def forward(self, input_ids, attention_mask=None, labels=None):
        hidden, presents = self.transformer(input_ids, attention_mask)
        logits = self.lm_head(hidden)
        out = {}
        if labels is not None:
            shift_logits = logits[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous()
            out["loss"] = F.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
            del shift_logits, shift_labels
        out["logits"] = logits
        out["past_key_values"] = presents
        return out


def gpt2_large():
    return GPT2LMHeadModel(GPT2Config(layers=36, embd=1280, heads=20))


def gpt2_xl():
    return GPT2LMHeadModel(GPT2Config(layers=48, embd=1600, heads=25))


def input_fn(batch, input_shape=None):
    """The script's batch on the GPU: input_ids and attention_mask (int64 [batch, seq]); labels is
    input_ids itself (`model(..., labels=input_ids)`), one tensor. `--input N` = seq len."""
    seq = input_shape[0] if input_shape else SEQ_LEN
    input_ids = torch.randint(0, VOCAB, (batch, seq), dtype=torch.long)
    attention_mask = torch.ones((batch, seq), dtype=torch.long)
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": input_ids}


def loss_fn(output, batch):
    """`loss = outputs.loss` (gpt2_xl) or `outputs.loss.mean()` (DataParallel: one loss per GPU)."""
    loss = output["loss"]
    return loss.mean() if loss.dim() else loss
