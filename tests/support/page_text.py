"""Random text lines for the evaluation page set: English, Chinese and mixed.

Deterministic from a ``random.Random``. Every character it can emit is in
PP-OCRv4's rec dictionary (tests/unit/test_page_set.py checks it), so a
missed character is the model's fault, never an impossible label. English
reuses ``synth``'s words and adds numbers, dates, amounts, codes, casing and
punctuation; Chinese draws from ~400 common characters and ``synth``'s words.
"""

from __future__ import annotations

import random

from tests.support.synth import EN_WORDS, ZH_WORDS

__all__ = ["COMMON_HANZI", "ZH_PUNCT", "alphabet", "en_line", "line_text", "mixed_line", "zh_line"]

# frequent characters of everyday and business text (each once)
COMMON_HANZI = (
    "的一是不了人我在有他这为之大来以个中上们到说国和地也子时道出而要于就下得可你年生自会那后能对着事其里所去行过家十用发天如"
    "然作方成者多日都三小军二无同么经法当起与好看学进种将还分此心前面又定见只主没公从知使现身高理已把话正外两些新意动开本实长"
    "部民向合问做很体力重等手机电气第想政明相关内点路期业并走间物员常特色水感报西务原产提加月品直情何程由入全号通变化象东量更"
    "先五市四农少信解老平条次立代美吃样工最连反结给位今写件记达计思白近放比区利制车听万书别带场她口收论南处题非被北料打住根张"
    "青声九识土飞医官认运算类展师八支影光斗百读金交花办快空早流接友需志石设战热离落远布六包七清球尽钱银店价格费税单据码编姓名"
    "性龄岁男女址省县镇村街楼室邮箱网站司企门职客户服商数额总备注星午晚议告划项目任完度果标准规型批库存仓储输配送订票协签字盖"
    "章确审核申请登册账密录系统软硬络息技术研究教育校课考试绩图馆院病药健康检保险款取转贷卡超餐厅酒火铁租汽停晴雨雪风温湿春夏"
    "秋冬"
)
ZH_PUNCT = "，。：；、"
_EN_PUNCT = ".,:;"
_CODE_LETTERS = "ABCDEFGHJKLMNPRSTUVWXYZ"


def _number_token(rng: random.Random) -> str:
    kind = rng.randrange(7)
    if kind == 0:
        return f"{rng.randint(1, 9)},{rng.randint(0, 999):03d}"
    if kind == 1:
        return f"{rng.randint(0, 999)}.{rng.randint(0, 99):02d}"
    if kind == 2:
        return f"20{rng.randint(10, 29)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if kind == 3:
        return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"
    if kind == 4:
        return f"${rng.randint(1, 999)}.{rng.randint(0, 99):02d}"
    if kind == 5:
        return f"{rng.randint(1, 99)}%"
    return f"{rng.choice(_CODE_LETTERS)}{rng.choice(_CODE_LETTERS)}-{rng.randint(100, 9999)}"


def en_line(rng: random.Random, n_words: int) -> str:
    """``n_words`` space-separated words and tokens, in one of four casings."""
    words = [_number_token(rng) if rng.random() < 0.2 else rng.choice(EN_WORDS) for _ in range(max(1, n_words))]
    casing = rng.randrange(6)
    if casing == 0:
        words = [w.upper() for w in words]
    elif casing == 1:
        words = [w.capitalize() for w in words]
    elif casing in (2, 3):
        words[0] = words[0].capitalize()
    if len(words) > 2 and rng.random() < 0.3:
        i = rng.randrange(len(words) - 1)
        words[i] += rng.choice(_EN_PUNCT)
    return " ".join(words)


def zh_line(rng: random.Random, n_chars: int) -> str:
    """About ``n_chars`` Chinese characters: words and single common characters,
    now and then a comma or colon inside, or a number."""
    out = ""
    while len(out) < max(1, n_chars):
        roll = rng.random()
        if roll < 0.35:
            out += rng.choice(ZH_WORDS)
        elif roll < 0.92:
            out += rng.choice(COMMON_HANZI)
        else:
            out += str(rng.randint(1, 2099))
        if 2 < len(out) < n_chars - 1 and rng.random() < 0.06:
            out += rng.choice(ZH_PUNCT)
    return out[: max(1, n_chars)]


def mixed_line(rng: random.Random, n_parts: int) -> str:
    """Chinese runs and English words or numbers in one line, space-separated."""
    parts = []
    for i in range(max(2, n_parts)):
        if i % 2 == 0:
            parts.append(zh_line(rng, rng.randint(2, 5)))
        else:
            parts.append(_number_token(rng) if rng.random() < 0.5 else rng.choice(EN_WORDS))
    return " ".join(parts)


def line_text(rng: random.Random, script: str, length: int) -> str:
    """One line: ``length`` is words (en), characters (zh) or runs (mixed)."""
    if script == "en":
        return en_line(rng, length)
    if script == "zh":
        return zh_line(rng, length)
    if script == "mixed":
        return mixed_line(rng, length)
    raise ValueError(f"unknown script {script!r} (en, zh, mixed)")


def alphabet() -> set[str]:
    """Every character the generators can emit (spaces aside)."""
    chars = set(COMMON_HANZI + ZH_PUNCT + _EN_PUNCT + _CODE_LETTERS + "0123456789,.-:$%")
    for word in EN_WORDS + ZH_WORDS:
        chars |= set(word) | set(word.upper()) | set(word.capitalize())
    return chars
