"""Which version of a pipeline name answers a request, and whether a shadow
version gets a copy. Pure logic, thread-safe. With a key (the sticky-key
header, else the logid) both answers are blake2b hashes of it, in two domains
(the shadow sample is independent of the A/B split); without one,
:meth:`Router.pick` is nginx's smooth weighted round robin and
:meth:`Router.shadow` an exact accumulator (after ``N`` calls, ``floor(N *
sample)`` said yes). Weight-0 versions are never picked.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping
from fractions import Fraction

__all__ = ["Router"]

# blake2b personalisation (<= 16 bytes): pick and shadow hash a key in separate domains
_PICK_DOMAIN = b"batchline.pick"
_SHADOW_DOMAIN = b"batchline.shadow"
# the unkeyed shadow share as a fraction p/q with q <= this: the accumulator counts
# modulo q in integers (no float drift), and e.g. 0.3333333333333333 becomes 1/3
_MAX_SAMPLE_DENOMINATOR = 1_000_000


class Router:
    """Weighted version choice and shadow sampling for one pipeline name. ``weights``:
    version -> weight (ints >= 0, sum > 0); ``shadow_sample``: the share copied to the
    shadow (0: never); ``salt`` (the route's name) keeps two routes from splitting keys alike."""

    def __init__(self, weights: Mapping[int, int], shadow_sample: float = 0.0, salt: str = ""):
        self._weights = _validated_weights(weights)
        if isinstance(shadow_sample, bool) or not isinstance(shadow_sample, (int, float)):
            raise ValueError(f"shadow_sample must be a number in [0, 1], got {shadow_sample!r}")
        if not 0.0 <= shadow_sample <= 1.0:  # also refuses NaN
            raise ValueError(f"shadow_sample must be in [0, 1], got {shadow_sample!r}")
        self._sample = float(shadow_sample)
        self._salt = salt.encode("utf-8")
        # only versions with traffic take part in the choice; sorted so that the
        # key -> version mapping does not depend on the mapping's order
        self._active = [(v, w) for v, w in sorted(self._weights.items()) if w > 0]
        self._total = sum(w for _, w in self._active)
        share = Fraction(self._sample).limit_denominator(_MAX_SAMPLE_DENOMINATOR)
        self._share_num, self._share_den = share.numerator, share.denominator
        self._lock = threading.Lock()
        self._current = [0] * len(self._active)  # smooth round robin's running weights
        self._seen = 0  # unkeyed shadow decisions so far, modulo the share's denominator

    @property
    def weights(self) -> dict[int, int]:
        """version -> weight, as given (weight-0 versions included), by version."""
        return dict(self._weights)

    # ---- version --------------------------------------------------------
    def pick(self, key: str | None) -> int:
        """The version for a request with sticky ``key`` (None or "" for none)."""
        if len(self._active) == 1:
            return self._active[0][0]
        if key:
            point = (self._hash(_PICK_DOMAIN, key) * self._total) >> 64
            for version, weight in self._active:
                if point < weight:
                    return version
                point -= weight
            raise AssertionError("unreachable: point < total weight")
        with self._lock:
            best = 0
            for i, (_, weight) in enumerate(self._active):
                self._current[i] += weight
                if self._current[i] > self._current[best]:
                    best = i
            self._current[best] -= self._total
        return self._active[best][0]

    # ---- shadow ---------------------------------------------------------
    def shadow(self, key: str | None) -> bool:
        """Whether a request with sticky ``key`` (None or "" for none) is copied to the shadow."""
        if self._sample == 0.0:
            return False
        if key:
            return self._hash(_SHADOW_DOMAIN, key) < self._sample * 2**64
        with self._lock:
            n = self._seen
            self._seen = (n + 1) % self._share_den  # the pattern repeats every denominator calls
        return (n + 1) * self._share_num // self._share_den > n * self._share_num // self._share_den

    def _hash(self, domain: bytes, key: str) -> int:
        """A 64-bit hash of salt + key in ``domain``: stable across processes and runs."""
        data = len(self._salt).to_bytes(4, "big") + self._salt + key.encode("utf-8", "surrogatepass")
        return int.from_bytes(hashlib.blake2b(data, digest_size=8, person=domain).digest(), "big")

    def __repr__(self) -> str:
        return f"Router(weights={self._weights!r}, shadow_sample={self._sample!r})"


def _validated_weights(weights: Mapping[int, int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for version, weight in weights.items():
        if isinstance(version, bool) or not isinstance(version, int):
            raise ValueError(f"versions must be ints, got {version!r}")
        if isinstance(weight, bool) or not isinstance(weight, int):
            raise ValueError(f"weight of version {version} must be an int, got {weight!r}")
        if weight < 0:
            raise ValueError(f"weight of version {version} must be >= 0, got {weight}")
        out[version] = weight
    if sum(out.values()) <= 0:
        raise ValueError(f"weights must sum to more than 0, got {dict(weights)!r}")
    return dict(sorted(out.items()))
