"""A small ERNIE-architecture sequence classifier (Paddle dygraph).

Embeddings (word + position + token type) -> LayerNorm -> dropout ->
post-norm Transformer encoder (GELU) -> tanh pooler over [CLS] -> classifier.
The attention mask is derived inside the network from ``input_ids != pad_id``,
so a caller only feeds ``input_ids`` and ``token_type_ids`` and any right
padding is masked out (batched and unbatched runs agree).

Paddle is imported lazily by :func:`build_model`, so importing this module is
cheap.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class ErnieConfig:
    vocab_size: int
    num_labels: int
    hidden_size: int = 128
    num_layers: int = 2
    num_heads: int = 4
    intermediate_size: int = 256
    max_position: int = 512
    type_vocab_size: int = 2
    dropout: float = 0.1
    pad_id: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def build_model(cfg: ErnieConfig):
    """Instantiate the classifier (a ``paddle.nn.Layer``)."""
    import paddle
    from paddle import nn

    class ErnieEmbeddings(nn.Layer):
        def __init__(self):
            super().__init__()
            self.word_embeddings = nn.Embedding(cfg.vocab_size, cfg.hidden_size, padding_idx=cfg.pad_id)
            self.position_embeddings = nn.Embedding(cfg.max_position, cfg.hidden_size)
            self.token_type_embeddings = nn.Embedding(cfg.type_vocab_size, cfg.hidden_size)
            self.layer_norm = nn.LayerNorm(cfg.hidden_size, epsilon=1e-12)
            self.dropout = nn.Dropout(cfg.dropout)

        def forward(self, input_ids, token_type_ids):
            ones = paddle.ones_like(input_ids)
            position_ids = paddle.cumsum(ones, axis=-1) - ones  # [B, L]: 0..L-1
            emb = (
                self.word_embeddings(input_ids)
                + self.position_embeddings(position_ids)
                + self.token_type_embeddings(token_type_ids)
            )
            return self.dropout(self.layer_norm(emb))

    class ErnieForSequenceClassification(nn.Layer):
        def __init__(self):
            super().__init__()
            self.embeddings = ErnieEmbeddings()
            layer = nn.TransformerEncoderLayer(
                d_model=cfg.hidden_size,
                nhead=cfg.num_heads,
                dim_feedforward=cfg.intermediate_size,
                dropout=cfg.dropout,
                activation="gelu",
                attn_dropout=cfg.dropout,
                act_dropout=0.0,
                normalize_before=False,
            )
            self.encoder = nn.TransformerEncoder(layer, cfg.num_layers)
            self.pooler = nn.Linear(cfg.hidden_size, cfg.hidden_size)
            self.dropout = nn.Dropout(cfg.dropout)
            self.classifier = nn.Linear(cfg.hidden_size, cfg.num_labels)

        def forward(self, input_ids, token_type_ids):
            keep = paddle.cast(input_ids != cfg.pad_id, "float32")  # [B, L]
            attn_mask = paddle.unsqueeze((keep - 1.0) * 1e4, axis=[1, 2])  # [B, 1, 1, L] additive
            seq = self.encoder(self.embeddings(input_ids, token_type_ids), src_mask=attn_mask)
            pooled = paddle.tanh(self.pooler(seq[:, 0]))
            return self.classifier(self.dropout(pooled))

    return ErnieForSequenceClassification()
