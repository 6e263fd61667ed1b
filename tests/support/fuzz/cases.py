"""The fuzz case table and the deterministic case sequence drawn from it.

Each category is a builder (``Draw -> Request``, in image_cases, body_cases or
http_cases) registered here by name with its weight (relative frequency) and
the statuses allowed in answer. To add a category, write a builder and add a
row; append it at the end, or every seed's sequence after it changes."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tests.support.fuzz import body_cases, http_cases, image_cases
from tests.support.fuzz.case import ANY_4XX, Case, Limits, Request
from tests.support.fuzz.draw import Draw


@dataclass(frozen=True)
class Category:
    name: str
    build: Callable[[Draw], Request]
    weight: int
    expect: tuple[int, ...]  # allowed statuses (ANY_4XX: any 4xx); a builder may narrow them per request
    heavy: bool = False  # costs the server seconds and ~1 GB if a fix regresses (full decode of a bomb)
    lenient: bool = False  # a 200 is fine too: the input may still be a decodable image

    def make(self, draw: Draw) -> Case:
        req = self.build(draw)
        expect = self.expect if req.expect is None else req.expect
        return Case(self.name, req.method, req.path, req.body, req.headers, expect, self.lenient)


CASES: tuple[Category, ...] = (
    Category("random_bytes_paddle", image_cases.random_bytes_paddle, 4, (400,)),
    Category("random_bytes_native_json", image_cases.random_bytes_native_json, 3, (400,)),
    Category("random_bytes_multipart", image_cases.random_bytes_multipart, 3, (400,)),
    Category("random_bytes_raw", image_cases.random_bytes_raw, 3, (400,)),
    Category("truncated_image", image_cases.truncated_image, 6, (400,)),
    Category("tiny_image", image_cases.tiny_image, 4, (400,)),
    Category("pixel_bomb_header", image_cases.pixel_bomb_header, 4, (413,)),
    Category("pixel_bomb_pil_bypass", image_cases.pixel_bomb_pil_bypass, 1, (413,), heavy=True),
    Category("pixel_bomb_hdr", image_cases.pixel_bomb_hdr, 1, (400, 413), heavy=True),
    Category("body_over_limit", http_cases.body_over_limit, 3, (413,)),
    Category("body_over_limit_raw", http_cases.body_over_limit_raw, 2, (413,)),
    Category("wrong_json_types", body_cases.wrong_json_types, 6, (400, 413)),
    Category("missing_keys", body_cases.missing_keys, 3, (400,)),
    Category("length_mismatch", body_cases.length_mismatch, 2, (400,)),
    Category("extra_keys_paddle", body_cases.extra_keys_paddle, 2, (200,), lenient=True),
    Category("non_utf8", body_cases.non_utf8, 3, (400,)),
    Category("invalid_json", body_cases.invalid_json, 4, (400,)),
    Category("huge_key_list", http_cases.huge_key_list, 2, (400, 413)),
    Category("wrong_key_names", body_cases.wrong_key_names, 3, (400,)),
    Category("bad_options", body_cases.bad_options, 4, (400,)),
    Category("bad_base64", body_cases.bad_base64, 4, (400,)),
    Category("unknown_pipeline", http_cases.unknown_pipeline, 3, (404,)),
    Category("wrong_method", http_cases.wrong_method, 2, (405,)),
    Category("native_json_shape", body_cases.native_json_shape, 5, (400,)),
    Category("multipart_shape", http_cases.multipart_shape, 4, (400,)),
    Category("too_many_inputs", http_cases.too_many_inputs, 2, (413,)),
    Category("unsupported_content_type", http_cases.unsupported_content_type, 3, (400,)),
    Category("bad_query_options", http_cases.bad_query_options, 2, (400,)),
    Category("mutated_image", image_cases.mutated_image, 4, ANY_4XX, lenient=True),
    # once server bugs this fuzz found (500s or full decodes; fixed, see docs/RELIABILITY.md)
    Category("deep_json", body_cases.deep_json, 1, (400,)),
    Category("huge_int", body_cases.huge_int, 1, (400,)),
    Category("option_digits", body_cases.option_digits, 1, (400,)),
    # hostile bodies (issue 25): refused before they cost more than a few times their size
    Category("json_amplification", body_cases.json_amplification, 1, (400, 413)),
    Category("bad_logid", body_cases.bad_logid, 2, (400,)),
    Category("multipart_tiny_parts", body_cases.multipart_tiny_parts, 1, (413,)),
    Category("alpha_depth_bomb", image_cases.alpha_depth_bomb, 1, (413, 503), heavy=True, lenient=True),
    # every door (issue 38): refused from the headers, before anything of the body is read
    Category("body_to_open_path", http_cases.body_to_open_path, 2, (401, 413)),
    Category("oversized_headers", http_cases.oversized_headers, 1, (431,)),
)


def generate(name: str, limits: Limits, count: int, *, seed: int = 0, heavy: bool = True) -> Iterator[Case]:
    """``count`` cases for pipeline ``name``: every category once (in table
    order), then weighted random draws; the same for the same arguments."""
    rng = random.Random(seed)
    draw = Draw(name, limits, rng)
    table = [c for c in CASES if heavy or not c.heavy]
    order = table[:count] + rng.choices(table, [c.weight for c in table], k=max(0, count - len(table)))
    for category in order:
        yield category.make(draw)
