"""Field lines of mixed lengths for the ERNIE op's tests: generated lines plus
long ones joined from them, so a batch spans several length buckets."""

from __future__ import annotations

import random

from recipes.ernie_fields.data import generate


def mixed_texts(n: int = 60, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    texts = [t for t, _ in generate(n // 6, seed)]
    texts += [" ".join(rng.choice(texts) for _ in range(rng.randint(3, 12))) for _ in range(n // 4)]
    rng.shuffle(texts)
    return texts
