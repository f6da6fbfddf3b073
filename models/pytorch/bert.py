"""BERT for masked language modelling in plain PyTorch, as CARMA's workloads/BERT_base_on_wiki.py and
BERT_large_on_wiki.py train it (Hugging Face `BertForMaskedLM(BertConfig(...))` from scratch, no
`transformers` needed here):

    python3 -m colo_probe --model models/pytorch/bert.py:bert_base --input 512 --batch 32 --optimizer adamw

Configuration (the scripts' BertConfig): vocab 28,996 (the `bert-large-cased` tokenizer, used by both
scripts), 512 positions, 2 token types, GELU (erf), LayerNorm eps 1e-12, hidden and attention dropout
0.1; base: 12 layers, hidden 768, 12 heads, FFN 3072; large: 24 layers, 1024, 16 heads, 4096.
BertForMaskedLM has no pooler; its head is dense + GELU + LayerNorm and a decoder whose weight is the
word embedding (tied) and whose bias is the head's own `bias`. Unique parameters: base 108,340,804,
large 333,610,308 (CARMA's module summaries print 130,638,728 / 363,331,208: they count the tied
decoder weight and the shared bias twice).

The training step is the scripts': the batch (input_ids, attention_mask, labels; padded to 512 by the
tokenizer) goes to the GPU, `outputs = model(input_ids=..., attention_mask=..., labels=...)`, the loss
is computed inside forward (cross-entropy of the [batch, seq, vocab] float32 logits), and `outputs`
(logits included) stays referenced until the next iteration replaces it.

Attention is Hugging Face's BertSdpaSelfAttention (the summaries name it): q, k, v as [B, H, S, D]
views of the three projections, `scaled_dot_product_attention(q, k, v, attn_mask=[B,1,S,S] float mask,
dropout_p=0.1)`. How a model file must call SDPA so it works everywhere:
  * look it up at call time, `getattr(torch.nn.functional, "scaled_dot_product_attention", None)`;
    never `from torch.nn.functional import scaled_dot_product_attention` at import time.
  * Under the probe (PyTorch 1.13 or 2.x) that attribute is colo_probe.target_kernels' stand-in, set
    on torch.nn.functional only while probing: it records what the fused CUDA kernel keeps (q, k, v,
    output, float32 log-sum-exp), never the [B, H, S, S] matrix.
  * On PyTorch >= 2.0 outside the probe it is PyTorch's own SDPA (the fused kernels on a GPU).
  * On PyTorch 1.13 outside the probe it does not exist; `_sdpa` below computes the same result
    explicitly (softmax(QK^T/sqrt(d) + mask), dropout, @V), which does materialise the matrix.

The padding mask: the wikitext lines are far shorter than 512 tokens, so every batch has padding and
Hugging Face builds the [B, 1, S, S] float mask (`_prepare_4d_attention_mask_for_sdpa` skips it only
for an all-ones mask, a data-dependent test the probe cannot evaluate; it is built whenever an
attention_mask is given)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 28996        # BertTokenizer.from_pretrained('bert-large-cased').vocab_size
MAX_POSITIONS = 512
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


class BertConfig:
    def __init__(self, layers, hidden, heads, intermediate, vocab=VOCAB, max_positions=MAX_POSITIONS,
                 type_vocab=2, dropout=0.1, attention_dropout=0.1, eps=1e-12):
        self.layers, self.hidden, self.heads, self.intermediate = layers, hidden, heads, intermediate
        self.vocab, self.max_positions, self.type_vocab = vocab, max_positions, type_vocab
        self.dropout, self.attention_dropout, self.eps = dropout, attention_dropout, eps


class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab, c.hidden, padding_idx=0)
        self.position_embeddings = nn.Embedding(c.max_positions, c.hidden)
        self.token_type_embeddings = nn.Embedding(c.type_vocab, c.hidden)
        self.LayerNorm = nn.LayerNorm(c.hidden, eps=c.eps)
        self.dropout = nn.Dropout(c.dropout)
        self.register_buffer("position_ids", torch.arange(c.max_positions).expand((1, -1)).clone(), persistent=False)
        self.register_buffer("token_type_ids", torch.zeros((1, c.max_positions), dtype=torch.long), persistent=False)

    def forward(self, input_ids):
        bsz, seq = input_ids.shape
        position_ids = self.position_ids[:, :seq]
        token_type_ids = self.token_type_ids[:, :seq].expand(bsz, seq)
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        embeddings += self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads, self.head_dim = c.heads, c.hidden // c.heads
        self.query = nn.Linear(c.hidden, c.hidden)
        self.key = nn.Linear(c.hidden, c.hidden)
        self.value = nn.Linear(c.hidden, c.hidden)
        self.dropout_prob = c.attention_dropout

    def _heads(self, x):
        return x.view(x.shape[0], x.shape[1], self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, hidden, mask):
        bsz, seq, width = hidden.shape
        q, k, v = self._heads(self.query(hidden)), self._heads(self.key(hidden)), self._heads(self.value(hidden))
        out = _sdpa(q, k, v, attn_mask=mask, dropout_p=self.dropout_prob if self.training else 0.0)
        return out.transpose(1, 2).reshape(bsz, seq, width)


class BertResidual(nn.Module):
    """BertSelfOutput / BertOutput: dense, dropout, LayerNorm(x + residual)."""

    def __init__(self, c, width_in):
        super().__init__()
        self.dense = nn.Linear(width_in, c.hidden)
        self.LayerNorm = nn.LayerNorm(c.hidden, eps=c.eps)
        self.dropout = nn.Dropout(c.dropout)

    def forward(self, x, residual):
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = BertSelfAttention(c)
        self.output = BertResidual(c, c.hidden)

    def forward(self, hidden, mask):
        return self.output(self.self(hidden, mask), hidden)


class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden, c.intermediate)

    def forward(self, x):
        return F.gelu(self.dense(x))


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = BertResidual(c, c.intermediate)

    def forward(self, hidden, mask):
        attn = self.attention(hidden, mask)
        return self.output(self.intermediate(attn), attn)


class BertEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList(BertLayer(c) for _ in range(c.layers))

    def forward(self, hidden, mask):
        for layer in self.layer:
            hidden = layer(hidden, mask)
        return hidden


class BertModel(nn.Module):
    """BertModel(add_pooling_layer=False), as BertForMaskedLM builds it."""

    def __init__(self, c):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.encoder = BertEncoder(c)

    def forward(self, input_ids, attention_mask=None):
        hidden = self.embeddings(input_ids)
        mask = None
        if attention_mask is not None:
            # _prepare_4d_attention_mask_for_sdpa -> AttentionMaskConverter._expand_mask
            bsz, seq = attention_mask.shape
            expanded = attention_mask[:, None, None, :].expand(bsz, 1, seq, seq).to(hidden.dtype)
            inverted = 1.0 - expanded
            mask = inverted.masked_fill(inverted.to(torch.bool), torch.finfo(hidden.dtype).min)
            del expanded, inverted
        return self.encoder(hidden, mask)


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden, c.hidden)
        self.LayerNorm = nn.LayerNorm(c.hidden, eps=c.eps)

    def forward(self, x):
        return self.LayerNorm(F.gelu(self.dense(x)))


class BertLMPredictionHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transform = BertPredictionHeadTransform(c)
        self.decoder = nn.Linear(c.hidden, c.vocab, bias=False)
        self.bias = nn.Parameter(torch.zeros(c.vocab))
        self.decoder.bias = self.bias

    def forward(self, x):
        return self.decoder(self.transform(x))


class BertOnlyMLMHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.predictions = BertLMPredictionHead(c)

    def forward(self, x):
        return self.predictions(x)


class BertForMaskedLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.bert = BertModel(c)
        self.cls = BertOnlyMLMHead(c)
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight  # tie_weights()

    def forward(self, input_ids, attention_mask=None, labels=None):
        logits = self.cls(self.bert(input_ids, attention_mask))
        out = {}
        if labels is not None:
            out["loss"] = F.cross_entropy(logits.view(-1, self.config.vocab), labels.view(-1))  # ignore_index -100
        out["logits"] = logits
        return out


def bert_base():
    return BertForMaskedLM(BertConfig(layers=12, hidden=768, heads=12, intermediate=3072))


def bert_large():
    return BertForMaskedLM(BertConfig(layers=24, hidden=1024, heads=16, intermediate=4096))


def input_fn(batch, input_shape=None):
    """What DataCollatorForLanguageModeling yields and the script moves to the GPU: input_ids,
    attention_mask, labels (int64 [batch, seq]; labels -100 where not masked). `--input N` = seq len."""
    seq = input_shape[0] if input_shape else SEQ_LEN
    input_ids = torch.randint(0, VOCAB, (batch, seq), dtype=torch.long)
    attention_mask = torch.ones((batch, seq), dtype=torch.long)
    labels = torch.where(torch.rand(batch, seq) < 0.15, input_ids, torch.full_like(input_ids, -100))
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


def loss_fn(output, batch):
    """`loss = outputs.loss` (a vector of per-replica losses under DataParallel: its mean)."""
    loss = output["loss"]
    return loss.mean() if loss.dim() else loss
