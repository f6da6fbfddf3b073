"""XLNet for sequence classification in plain PyTorch, as CARMA's workloads/xlnet_base_cased.py and
xlnet_large_cased.py train it: Hugging Face `XLNetForSequenceClassification.from_pretrained(
"xlnet-base-cased" / "xlnet-large-cased")` (num_labels 2, every label 1) under `Trainer`, no
`transformers` needed here:

    python3 -m colo_probe --model models/pytorch/xlnet.py:xlnet_base_cased --input 512 --batch 16 \
        --optimizer adamw --data-parallel 2

Trainer and the GPUs: with 2 GPUs visible Trainer wraps the model in torch.nn.DataParallel and its
batch is per_device_train_batch_size x n_gpu, so xlnet_base_cased_2 (per-device batch 8) runs a global
batch of 16 (8 per GPU) and xlnet_large_cased_2 (4) a global batch of 8. The loss is computed inside
forward (cross-entropy of the [batch, 2] logits), one per GPU, and Trainer takes their mean.
Sequence length: DataCollatorWithPadding pads to the longest line of the batch (truncation at 512);
`--input 512` is the worst case, which the caching allocator's peak remembers.

Configuration (the pretrained configs): vocab 32,000, d_head 64, GELU, LayerNorm eps 1e-12, dropout
0.1, attn_type 'bi', untie_r (per-layer biases), no memory in training (use_mems_train False), no
bi_data, clamp_len -1; base: 12 layers, d_model 768, 12 heads, d_inner 3072; large: 24, 1024, 16, 4096.
SequenceSummary 'last' with a d_model x d_model projection, tanh, dropout 0.1; logits_proj d_model -> 2.
Parameters: XLNetModel base 116,718,336 / large 360,268,800 (word embedding, mask_emb, per layer q,k,v,
o,r [d_model, heads, 64], r_r/r_s/r_w biases, seg_embed [2, heads, 64], two LayerNorms, the FFN),
with the classification head 117,310,466 / 361,320,450: the totals of CARMA's module summaries.

Attention: XLNet has no SDPA in Hugging Face; XLNetRelativeAttention is written with einsums as there,
content stream only (no perm_mask / target_mapping: the two-stream path is not taken): content score
ac, position score bd over the 2S relative positions ([B, H, S, 2S], then rel_shift with
index_select), segment score ef, the additive padding mask, softmax and dropout; the [B, H, S, S]
probabilities, their dropout mask and the dropped-out probabilities are kept for backward.
F.one_hot (segment matrix) has no meta kernel in PyTorch 1.13: it is written as CUDA computes it,
zeros(...).scatter_(-1, index, 1) (same int64 result)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 32000
SEQ_LEN = 512


class XLNetConfig:
    def __init__(self, layers, d_model, heads, d_inner, vocab=VOCAB, dropout=0.1, eps=1e-12, num_labels=2):
        self.layers, self.d_model, self.heads, self.d_inner = layers, d_model, heads, d_inner
        self.d_head = d_model // heads
        self.vocab, self.dropout, self.eps, self.num_labels = vocab, dropout, eps, num_labels


def _param(*shape):
    p = nn.Parameter(torch.empty(*shape))
    nn.init.normal_(p, std=0.02)
    return p


class XLNetRelativeAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_head, self.d_head = c.heads, c.d_head
        self.scale = 1 / (c.d_head ** 0.5)
        self.q = _param(c.d_model, c.heads, c.d_head)
        self.k = _param(c.d_model, c.heads, c.d_head)
        self.v = _param(c.d_model, c.heads, c.d_head)
        self.o = _param(c.d_model, c.heads, c.d_head)
        self.r = _param(c.d_model, c.heads, c.d_head)
        self.r_r_bias = _param(c.heads, c.d_head)
        self.r_s_bias = _param(c.heads, c.d_head)
        self.r_w_bias = _param(c.heads, c.d_head)
        self.seg_embed = _param(2, c.heads, c.d_head)
        self.layer_norm = nn.LayerNorm(c.d_model, eps=c.eps)
        self.dropout = nn.Dropout(c.dropout)

    @staticmethod
    def rel_shift_bnij(x, klen=-1):
        x_size = x.shape
        x = x.reshape(x_size[0], x_size[1], x_size[3], x_size[2])
        x = x[:, :, 1:, :]
        x = x.reshape(x_size[0], x_size[1], x_size[2], x_size[3] - 1)
        return torch.index_select(x, 3, torch.arange(klen, device=x.device, dtype=torch.long))

    def rel_attn_core(self, q_head, k_head_h, v_head_h, k_head_r, seg_mat, attn_mask):
        ac = torch.einsum("ibnd,jbnd->bnij", q_head + self.r_w_bias, k_head_h)
        bd = torch.einsum("ibnd,jbnd->bnij", q_head + self.r_r_bias, k_head_r)
        bd = self.rel_shift_bnij(bd, klen=ac.shape[3])
        if seg_mat is None:
            ef = 0
        else:
            ef = torch.einsum("ibnd,snd->ibns", q_head + self.r_s_bias, self.seg_embed)
            ef = torch.einsum("ijbs,ibns->bnij", seg_mat, ef)
        attn_score = (ac + bd + ef) * self.scale
        del ac, bd, ef
        if attn_mask is not None:
            attn_score = attn_score - 1e30 * torch.einsum("ijbn->bnij", attn_mask)
        attn_prob = F.softmax(attn_score, dim=3)
        del attn_score
        attn_prob = self.dropout(attn_prob)
        return torch.einsum("bnij,jbnd->ibnd", attn_prob, v_head_h)

    def post_attention(self, h, attn_vec):
        attn_out = torch.einsum("ibnd,hnd->ibh", attn_vec, self.o)
        attn_out = self.dropout(attn_out)
        return self.layer_norm(attn_out + h)

    def forward(self, h, attn_mask_h, r, seg_mat):
        q_head_h = torch.einsum("ibh,hnd->ibnd", h, self.q)
        k_head_h = torch.einsum("ibh,hnd->ibnd", h, self.k)
        v_head_h = torch.einsum("ibh,hnd->ibnd", h, self.v)
        k_head_r = torch.einsum("ibh,hnd->ibnd", r.type(self.r.dtype), self.r)
        attn_vec = self.rel_attn_core(q_head_h, k_head_h, v_head_h, k_head_r, seg_mat, attn_mask_h)
        return self.post_attention(h, attn_vec)


class XLNetFeedForward(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer_norm = nn.LayerNorm(c.d_model, eps=c.eps)
        self.layer_1 = nn.Linear(c.d_model, c.d_inner)
        self.layer_2 = nn.Linear(c.d_inner, c.d_model)
        self.dropout = nn.Dropout(c.dropout)

    def forward(self, inp):
        out = self.dropout(F.gelu(self.layer_1(inp)))
        out = self.dropout(self.layer_2(out))
        return self.layer_norm(out + inp)


class XLNetLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.rel_attn = XLNetRelativeAttention(c)
        self.ff = XLNetFeedForward(c)
        self.dropout = nn.Dropout(c.dropout)

    def forward(self, h, attn_mask_h, r, seg_mat):
        return self.ff(self.rel_attn(h, attn_mask_h, r, seg_mat))


class XLNetModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.d_model = c.d_model
        self.word_embedding = nn.Embedding(c.vocab, c.d_model)
        self.mask_emb = _param(1, 1, c.d_model)
        self.layer = nn.ModuleList(XLNetLayer(c) for _ in range(c.layers))
        self.dropout = nn.Dropout(c.dropout)

    def relative_positional_encoding(self, qlen, klen, bsz):
        """attn_type 'bi', no bi_data, clamp_len -1: computed on the CPU, copied to the GPU."""
        freq_seq = torch.arange(0, self.d_model, 2.0, dtype=torch.int64).float()
        inv_freq = 1 / torch.pow(10000, (freq_seq / self.d_model))
        fwd_pos_seq = torch.arange(klen, -qlen, -1.0, dtype=torch.int64).float()
        sinusoid_inp = torch.einsum("i,d->id", fwd_pos_seq, inv_freq)
        pos_emb = torch.cat([torch.sin(sinusoid_inp), torch.cos(sinusoid_inp)], dim=-1)
        # [2S, bsz, d_model]: expanded on the CPU; .to(cuda) of an expanded tensor makes it contiguous.
        return pos_emb[:, None, :].expand(-1, bsz, -1).contiguous()

    def forward(self, input_ids, token_type_ids=None, attention_mask=None):
        input_ids = input_ids.transpose(0, 1).contiguous()
        qlen, bsz = input_ids.shape
        token_type_ids = token_type_ids.transpose(0, 1).contiguous() if token_type_ids is not None else None
        attention_mask = attention_mask.transpose(0, 1).contiguous() if attention_mask is not None else None
        klen = qlen
        dtype = self.word_embedding.weight.dtype
        non_tgt_mask = None
        if attention_mask is not None:
            input_mask = 1.0 - attention_mask
            attn_mask = input_mask[None][:, :, :, None]
            attn_mask = (attn_mask > 0).to(dtype)
            non_tgt_mask = -torch.eye(qlen).to(attn_mask)
            non_tgt_mask = ((attn_mask + non_tgt_mask[:, :, None, None]) > 0).to(attn_mask)
            del input_mask, attn_mask
        output_h = self.dropout(self.word_embedding(input_ids))
        seg_mat = None
        if token_type_ids is not None:
            seg = (token_type_ids[:, None] != token_type_ids[None, :]).long()
            # F.one_hot(seg, num_classes=2), as the CUDA kernel computes it
            seg_mat = torch.zeros(seg.shape + (2,), dtype=torch.long, device=seg.device)
            seg_mat.scatter_(-1, seg.unsqueeze(-1), 1)
            del seg
            seg_mat = seg_mat.to(dtype)
        pos_emb = self.relative_positional_encoding(qlen, klen, bsz).to(output_h.device)
        pos_emb = self.dropout(pos_emb)
        for layer in self.layer:
            output_h = layer(output_h, non_tgt_mask, pos_emb, seg_mat)
        output = self.dropout(output_h)
        return output.permute(1, 0, 2).contiguous()


class SequenceSummary(nn.Module):
    """summary_type 'last', summary_use_proj, tanh, last dropout 0.1 (first dropout: identity)."""

    def __init__(self, c):
        super().__init__()
        self.summary = nn.Linear(c.d_model, c.d_model)
        self.activation = nn.Tanh()
        self.last_dropout = nn.Dropout(c.dropout)

    def forward(self, hidden):
        return self.last_dropout(self.activation(self.summary(hidden[:, -1])))


class XLNetForSequenceClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.transformer = XLNetModel(c)
        self.sequence_summary = SequenceSummary(c)
        self.logits_proj = nn.Linear(c.d_model, c.num_labels)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, labels=None):
        logits = self.logits_proj(self.sequence_summary(self.transformer(input_ids, token_type_ids, attention_mask)))
        out = {}
        if labels is not None:
            out["loss"] = F.cross_entropy(logits.view(-1, self.config.num_labels), labels.view(-1))
        out["logits"] = logits
        return out


def xlnet_base_cased():
    return XLNetForSequenceClassification(XLNetConfig(layers=12, d_model=768, heads=12, d_inner=3072))


def xlnet_large_cased():
    return XLNetForSequenceClassification(XLNetConfig(layers=24, d_model=1024, heads=16, d_inner=4096))


def input_fn(batch, input_shape=None):
    """What Trainer moves to the GPU: input_ids, token_type_ids, attention_mask (int64 [batch, seq])
    and labels (int64 [batch], all 1). `--input N` = seq len (the batch's longest line)."""
    seq = input_shape[0] if input_shape else SEQ_LEN
    return {"input_ids": torch.randint(0, VOCAB, (batch, seq), dtype=torch.long),
            "token_type_ids": torch.zeros((batch, seq), dtype=torch.long),
            "attention_mask": torch.ones((batch, seq), dtype=torch.long),
            "labels": torch.ones((batch,), dtype=torch.long)}


def loss_fn(output, batch):
    """Trainer.compute_loss: outputs["loss"], and its mean when n_gpu > 1 (one loss per replica)."""
    loss = output["loss"]
    return loss.mean() if loss.dim() else loss
