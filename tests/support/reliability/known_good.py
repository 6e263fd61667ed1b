"""A known-good request, and the check that a server is still healthy after
a run: /health/ready is 200 and the valid request gets the right answer."""

from __future__ import annotations

import base64
import json
from typing import Any

import requests

from tests.support.image_fakes import encode_png, expected_answer, make_image


def valid_image(path: str | None = None) -> tuple[bytes, Any]:
    """(PNG bytes, expected answer or None). With ``path``, that file and no expectation."""
    if path:
        with open(path, "rb") as f:
            return f.read(), None
    img = make_image(48, 32, seed=1)
    return encode_png(img), expected_answer(img)


def paddle_body(image: bytes, **extra: Any) -> bytes:
    body = {"key": ["image"], "value": [base64.b64encode(image).decode()], "logid": 1}
    body.update(extra)
    return json.dumps(body).encode()


def check_alive(
    url: str, name: str, image: bytes, expected: Any, timeout: float = 30.0, token: str | None = None
) -> list[str]:
    """Problems found (empty = healthy): /health/ready is 200 and a valid request answers correctly
    (sent with ``token`` where the server needs one)."""
    problems = []
    r = requests.get(url + "/health/ready", timeout=timeout)
    if r.status_code != 200:
        problems.append(f"/health/ready answered {r.status_code}")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    r = requests.post(f"{url}/{name}/prediction", data=paddle_body(image), headers=headers, timeout=timeout)
    if r.status_code != 200 or r.json().get("err_no") != 0:
        problems.append(f"valid request answered {r.status_code}: {r.text[:200]}")
    elif expected is not None and json.loads(r.json()["value"][0]) != expected:
        problems.append(f"valid request answered {r.json()['value'][0][:200]}, expected {expected}")
    return problems
