"""ERNIE text classification op (``ernie_cls``).

As a source op it classifies the request's text: ``{"input": "Tel: 010-1234"}``
-> ``{"label", "score", "probs"}``. Downstream of an OCR recognition op it
classifies every recognised line: ``{"rec": [{"text", "score", "box"}, ...]}``
-> the same line dicts with ``label`` and ``label_score`` added.

Items are token id sequences. ``collate`` groups them by length bucket (pad
to the smallest bucket >= the longest item of the group), so short and long
texts are not padded together; the model masks padding itself
(``input_ids != [PAD]``), so a text gets the same scores alone or in a batch.
A text's ``pad_extent`` is its length bucket in tokens, which
``max_batch_units`` counts (a batch: texts x largest bucket).

For shadow traffic, two answers agree when they give the same labels: the
text's label, or the label of every line in order (scores are not compared).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ops import text as T
from serving.op import BadRequest, InternalError, Op, OpContext, SubBatch, fields_agree

if TYPE_CHECKING:
    from tokenizers import Tokenizer

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Encoded:
    """A preprocessed item: the token ids of one text ([CLS] ... [SEP])."""

    ids: tuple[int, ...]


class ErnieClsParams(BaseModel):
    """``op.<name>.params`` of ``ernie_cls``."""

    model_config = ConfigDict(extra="forbid")

    max_seq_len: int = Field(
        128, ge=3, le=4096, description="tokens per text incl. [CLS]/[SEP]; longer texts are truncated"
    )
    length_buckets: list[int] = Field(
        default_factory=lambda: [16, 32, 64, 128],
        description="padded lengths; a sub-batch pads to the smallest bucket >= its longest item",
    )
    labels: list[str] | None = Field(None, description="label names overriding the model's labels.txt")
    vocab: str | None = Field(
        None,
        description="vocab.txt path (default: the model directory's); "
        "a relative path is looked up in the model directory, then the working directory",
    )
    field: str = Field("text", min_length=1, description="key of the text in upstream line dicts")

    @field_validator("length_buckets")
    @classmethod
    def _buckets(cls, v: list[int]) -> list[int]:
        if not v:
            raise ValueError("length_buckets must not be empty")
        if any(b < 3 for b in v):
            raise ValueError(f"length_buckets must be >= 3, got {v}")
        return sorted(set(v))

    @field_validator("labels")
    @classmethod
    def _labels(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and (not v or len(set(v)) != len(v)):
            raise ValueError("labels must be a non-empty list of distinct names")
        return v


class ErnieClsOp(Op):
    """Classify texts with an ERNIE sequence classifier (Paddle Inference)."""

    Params: ClassVar[type[BaseModel]] = ErnieClsParams
    input_kind: ClassVar[str | None] = "text"
    needs_model: ClassVar[bool] = True
    pad_unit: ClassVar[str | None] = "tokens"
    extent_groups: ClassVar[bool] = True  # collate: one call per length bucket

    @classmethod
    def answer_fields(cls, *, source: bool) -> Mapping[str, str]:
        # a text's answer is one {"label", "score", "probs"}; OCR lines keep their own shape
        return {"label": "BYTES", "score": "FP32"} if source else {}

    def __init__(self, ctx: OpContext):
        super().__init__(ctx)
        self.tokenizer: Tokenizer | None = None
        self.labels: list[str] = []
        self.pad_id = 0
        self.buckets: list[int] = []

    # ---- life cycle -------------------------------------------------
    @property
    def model_dir(self) -> str:
        model_dir = self.conf.local_service_conf.model_config
        if not model_dir:
            raise ValueError(f"op {self.name!r}: local_service_conf.model_config is required")
        return str(model_dir)

    def _path(self, given: str | None, default_name: str) -> str:
        if not given:
            return os.path.join(self.model_dir, default_name)
        if not os.path.isabs(given) and os.path.exists(os.path.join(self.model_dir, given)):
            return os.path.join(self.model_dir, given)
        return given

    def load(self) -> None:
        p = self.params
        vocab_path = self._path(p.vocab, "vocab.txt")
        if not os.path.isfile(vocab_path):
            raise FileNotFoundError(f"op {self.name!r}: vocab file not found: {vocab_path}")
        if p.labels is not None:
            labels = list(p.labels)
        else:
            labels_path = os.path.join(self.model_dir, "labels.txt")
            if not os.path.isfile(labels_path):
                raise FileNotFoundError(f"op {self.name!r}: no labels.txt in {self.model_dir} and no params.labels")
            labels = T.read_labels(labels_path)
        max_position = self._max_position()
        if max_position is not None and p.max_seq_len > max_position:
            raise ValueError(
                f"op {self.name!r}: max_seq_len {p.max_seq_len} exceeds the model's "
                f"max_position {max_position} (config.json)"
            )
        tokenizer = T.build_tokenizer(vocab_path, p.max_seq_len)
        self.pad_id = tokenizer.token_to_id(T.PAD_TOKEN) or 0  # read_vocab checked that [PAD] exists
        self.buckets = [b for b in p.length_buckets if b < p.max_seq_len] + [p.max_seq_len]
        self.labels = labels
        self.tokenizer = tokenizer
        logger.info(
            "op %s: vocab %s (%d tokens), labels %s, buckets %s",
            self.name,
            vocab_path,
            tokenizer.get_vocab_size(),
            labels,
            self.buckets,
        )

    def _max_position(self) -> int | None:
        """``max_position`` from the model's ``config.json``, if it has one."""
        path = os.path.join(self.model_dir, "config.json")
        if not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8") as f:
            value = json.load(f).get("max_position")
        return int(value) if isinstance(value, int) else None

    def _loaded_tokenizer(self) -> Any:
        if self.tokenizer is None:
            self.load()
        return self.tokenizer

    def warmup_items(self) -> list[Any]:
        tok = self._loaded_tokenizer()
        cls_id, sep_id = tok.token_to_id(T.CLS_TOKEN), tok.token_to_id(T.SEP_TOKEN)
        unk_id = tok.token_to_id(T.UNK_TOKEN)
        return [Encoded((cls_id,) + (unk_id,) * (b - 2) + (sep_id,)) for b in self.buckets]

    # ---- per request --------------------------------------------------
    def _lines(self, inputs: Mapping[str, Any]) -> list[Any]:
        """Upstream line records, in upstream order (all upstream ops concatenated)."""
        lines: list[Any] = []
        for name, value in inputs.items():
            if value is None:
                continue
            if isinstance(value, (str, dict)):
                lines.append(value)
            elif isinstance(value, (list, tuple)):
                lines.extend(value)
            else:
                raise BadRequest(
                    f"op {self.name!r}: cannot read texts from upstream {name!r} output of type {type(value).__name__}"
                )
        return lines

    def _line_text(self, line: Any) -> str | None:
        """The text to classify in one upstream line, or None if it has none."""
        text = line.get(self.params.field) if isinstance(line, dict) else line
        return text if isinstance(text, str) and text.strip() else None

    def expand(self, inputs: Mapping[str, Any]) -> Sequence[Any]:
        if "input" in inputs:
            return [inputs["input"]]
        texts = [self._line_text(line) for line in self._lines(inputs)]
        return [t for t in texts if t is not None]

    def merge(self, inputs: Mapping[str, Any], results: list[Any]) -> Any:
        if "input" in inputs:
            return results[0]
        out: list[dict] = []
        it = iter(results)
        for line in self._lines(inputs):
            rec = dict(line) if isinstance(line, dict) else {self.params.field: line}
            if self._line_text(line) is None:
                rec["label"], rec["label_score"] = None, None
            else:
                res = next(it)
                rec["label"], rec["label_score"] = res["label"], res["score"]
            out.append(rec)
        return out

    def agree(self, primary: Any, shadow: Any) -> bool:
        """The same label (a text), or the same lines with the same label each (OCR lines)."""
        same = fields_agree(primary, shadow, "label")
        return super().agree(primary, shadow) if same is None else same

    # ---- per item -------------------------------------------------------
    def preprocess(self, payload: Any) -> Encoded:
        if not isinstance(payload, str):
            raise BadRequest(f"op {self.name!r}: text must be a string, got {type(payload).__name__}")
        if not payload.strip():
            raise BadRequest(f"op {self.name!r}: text is empty")
        return Encoded(tuple(T.encode(self._loaded_tokenizer(), payload)))

    def postprocess(self, item: Encoded, output: Any) -> dict:
        logits = np.asarray(output[0], dtype=np.float64).reshape(-1)
        if logits.shape[0] != len(self.labels):
            raise InternalError(
                f"op {self.name!r}: model returned {logits.shape[0]} logits "
                f"but {len(self.labels)} labels are configured"
            )
        probs = T.softmax(logits)
        best = int(np.argmax(probs))
        return {
            "label": self.labels[best],
            "score": float(probs[best]),
            "probs": {lab: float(p) for lab, p in zip(self.labels, probs)},
        }

    def pad_extent(self, item: Encoded) -> tuple[int]:
        """Its length bucket: collate pads each text to the bucket of its group."""
        self._loaded_tokenizer()  # buckets come with it
        return (T.pick_bucket(len(item.ids), self.buckets),)

    # ---- per batch --------------------------------------------------------
    def collate(self, items: Sequence[Encoded]) -> list[SubBatch]:
        self._loaded_tokenizer()  # buckets and pad id come with it
        lengths = [len(it.ids) for it in items]
        subs = []
        for length, indices in T.group_by_bucket(lengths, self.buckets).items():
            ids = T.pad_ids([items[i].ids for i in indices], length, self.pad_id)
            subs.append(
                SubBatch(
                    indices=indices,
                    feed={"input_ids": ids, "token_type_ids": np.zeros_like(ids)},
                    real_units=sum(lengths[i] for i in indices),
                    padded_units=ids.size,
                )
            )
        return subs
