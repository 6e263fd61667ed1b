"""configs/repository/*.yml are configs/*.yml served together: equal key for key.

What may differ, and why:

* ``op.<name>.share``: only the repository serves several pipelines in one
  server, where ops of one share name run on one stage (ocr and ocr_ernie feed
  one det and one rec stage). A file served alone has nothing to share with.
* comments: each repository file's header says what the repository is.

Everything else (``name``, ``version``, ports, ``dag``, every op setting and
``params``) is the same, so a change to configs/ocr.yml that is not made to
configs/repository/ocr.yml fails here. A share needs one op everywhere, so the
ops ocr_ernie shares with ocr are also written the same in configs/ocr_ernie.yml
as in configs/ocr.yml.
"""

from pathlib import Path

import pytest

from serving.config.load import load_yaml

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"
REPOSITORY = CONFIGS / "repository"
REPOSITORY_FILES = sorted(p.name for p in REPOSITORY.glob("*.yml"))


def _read(path: Path) -> dict:
    return load_yaml(path.read_text(encoding="utf-8"), str(path))


def _without_share(data: dict) -> tuple[dict, dict[str, object]]:
    """The file's mapping without the ops' ``share`` keys, and those keys by op."""
    ops = {name: dict(op) for name, op in data["op"].items()}
    shares = {name: op.pop("share") for name, op in ops.items() if "share" in op}
    return {**data, "op": ops}, shares


def test_the_repository_holds_the_three_shipped_pipelines():
    assert REPOSITORY_FILES == ["ernie.yml", "ocr.yml", "ocr_ernie.yml"]


@pytest.mark.parametrize("name", REPOSITORY_FILES)
def test_a_repository_file_is_its_configs_file_plus_share(name):
    served_together, shares = _without_share(_read(REPOSITORY / name))
    alone = _read(CONFIGS / name)
    assert not any("share" in op for op in alone["op"].values()), f"configs/{name} is served alone: no share"
    assert served_together == alone, (
        f"configs/repository/{name} differs from configs/{name} beyond op.<name>.share: make the same change in both"
    )
    assert all(share is True for share in shares.values())


def test_ocr_ernie_shares_det_and_rec_as_written_in_ocr():
    _, shares = _without_share(_read(REPOSITORY / "ocr_ernie.yml"))
    _, ocr_shares = _without_share(_read(REPOSITORY / "ocr.yml"))
    assert sorted(shares) == sorted(ocr_shares) == ["det", "rec"]
    ocr, ocr_ernie = _read(CONFIGS / "ocr.yml"), _read(CONFIGS / "ocr_ernie.yml")
    for op in ("det", "rec"):
        assert ocr_ernie["op"][op] == ocr["op"][op], f"configs/ocr_ernie.yml op.{op} differs from configs/ocr.yml's"
