"""Synthetic document lines for the field-type task (Chinese and English).

Every line is what an OCR pass could return for one line of a receipt,
invoice, form or letter, labelled with its field type:
``date, money, phone, id, address, other``. Generation is deterministic from
the ``random.Random`` handed in (the build uses one seed for training and a
different one for the held-out set).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from recipes.ernie_fields.field_keys import DAYS as WEEKDAYS
from recipes.ernie_fields.field_keys import (
    KEYS,
    MONTHS,
    key_prefix,
    more_address,
    more_date,
    more_id,
    more_money,
    more_other,
    more_phone,
)
from recipes.ernie_fields.field_keys import (
    digits as _d,
)

LABELS = ["date", "money", "phone", "id", "address", "other"]

CN_DIGITS = "〇一二三四五六七八九"

EN_WORDS = [
    "the",
    "of",
    "and",
    "to",
    "a",
    "in",
    "is",
    "it",
    "you",
    "that",
    "he",
    "was",
    "for",
    "on",
    "are",
    "with",
    "as",
    "his",
    "they",
    "be",
    "at",
    "one",
    "have",
    "this",
    "from",
    "or",
    "had",
    "by",
    "hot",
    "word",
    "but",
    "what",
    "some",
    "we",
    "can",
    "out",
    "other",
    "were",
    "all",
    "there",
    "when",
    "up",
    "use",
    "your",
    "how",
    "said",
    "an",
    "each",
    "she",
    "which",
    "do",
    "their",
    "time",
    "if",
    "will",
    "way",
    "about",
    "many",
    "then",
    "them",
    "write",
    "would",
    "like",
    "so",
    "these",
    "her",
    "long",
    "make",
    "thing",
    "see",
    "him",
    "two",
    "has",
    "look",
    "more",
    "day",
    "could",
    "go",
    "come",
    "did",
    "number",
    "sound",
    "no",
    "most",
    "people",
    "my",
    "over",
    "know",
    "water",
    "than",
    "call",
    "first",
    "who",
    "may",
    "down",
    "side",
    "been",
    "now",
    "find",
    "any",
    "new",
    "work",
    "part",
    "take",
    "get",
    "place",
    "made",
    "live",
    "where",
    "after",
    "back",
    "little",
    "only",
    "round",
    "man",
    "year",
    "came",
    "show",
    "every",
    "good",
    "me",
    "give",
    "our",
    "under",
    "name",
    "very",
    "through",
    "just",
    "form",
    "sentence",
    "great",
    "think",
    "say",
    "help",
    "low",
    "line",
    "differ",
    "turn",
    "cause",
    "much",
    "mean",
    "before",
    "move",
    "right",
    "boy",
    "old",
    "too",
    "same",
    "tell",
    "does",
    "set",
    "three",
    "want",
    "air",
    "well",
    "also",
    "play",
    "small",
    "end",
    "put",
    "home",
    "read",
    "hand",
    "port",
    "large",
    "spell",
    "add",
    "even",
    "land",
    "here",
    "must",
    "big",
    "high",
    "such",
    "follow",
    "act",
    "why",
    "ask",
    "men",
    "change",
    "went",
    "light",
    "kind",
    "off",
    "need",
    "house",
    "picture",
    "try",
    "us",
    "again",
    "animal",
    "point",
    "mother",
    "world",
    "near",
    "build",
    "self",
    "earth",
    "father",
    "head",
    "stand",
    "own",
    "page",
    "should",
    "country",
    "found",
    "answer",
    "school",
    "grow",
    "study",
    "still",
    "learn",
    "plant",
    "cover",
    "food",
    "sun",
    "four",
    "between",
    "state",
    "keep",
    "eye",
    "never",
    "last",
    "let",
    "thought",
    "city",
    "tree",
    "cross",
    "farm",
    "hard",
    "start",
    "might",
    "story",
    "saw",
    "far",
    "sea",
    "draw",
    "left",
    "late",
    "run",
    "while",
    "press",
    "close",
    "night",
    "real",
    "life",
    "few",
    "north",
    "open",
    "seem",
    "together",
    "next",
    "white",
    "children",
    "begin",
    "got",
    "walk",
    "example",
    "ease",
    "paper",
    "group",
    "always",
    "music",
    "those",
    "both",
    "mark",
    "often",
    "letter",
    "until",
    "mile",
    "river",
    "car",
    "feet",
    "care",
    "second",
    "book",
    "carry",
    "took",
    "science",
    "eat",
    "room",
    "friend",
    "began",
    "idea",
    "fish",
    "mountain",
    "stop",
    "once",
    "base",
    "hear",
    "horse",
    "cut",
    "sure",
    "watch",
    "color",
    "face",
    "wood",
    "main",
    "enough",
    "plain",
    "girl",
    "usual",
    "young",
    "ready",
    "above",
    "ever",
    "red",
    "list",
    "though",
    "feel",
    "talk",
    "bird",
    "soon",
    "body",
    "dog",
    "family",
    "direct",
    "pose",
    "leave",
    "song",
    "measure",
    "door",
    "product",
    "black",
    "short",
    "numeral",
    "class",
    "wind",
    "question",
    "happen",
    "complete",
    "ship",
    "area",
    "half",
    "rock",
    "order",
    "fire",
    "south",
    "problem",
    "piece",
    "told",
    "knew",
    "pass",
    "since",
    "top",
    "whole",
    "king",
    "space",
    "heard",
    "best",
    "hour",
    "better",
    "true",
    "during",
    "hundred",
    "five",
    "remember",
    "step",
    "early",
    "hold",
    "west",
    "ground",
    "interest",
    "reach",
    "fast",
    "verb",
    "sing",
    "listen",
    "six",
    "table",
    "travel",
    "less",
    "morning",
    "ten",
    "simple",
    "several",
    "vowel",
    "toward",
    "war",
    "lay",
    "against",
    "pattern",
    "slow",
    "center",
    "love",
    "person",
    "money",
    "serve",
    "appear",
    "road",
    "map",
    "rain",
    "rule",
    "govern",
    "pull",
    "cold",
    "notice",
    "voice",
    "unit",
    "power",
    "town",
    "fine",
    "certain",
    "fly",
    "fall",
    "lead",
    "cry",
    "dark",
    "machine",
    "note",
    "wait",
    "plan",
    "figure",
    "star",
    "box",
    "noun",
    "field",
    "rest",
    "correct",
    "able",
    "pound",
    "done",
    "beauty",
    "drive",
    "stood",
    "contain",
    "front",
    "teach",
    "week",
    "final",
    "gave",
    "green",
    "quick",
    "develop",
    "ocean",
    "warm",
    "free",
    "minute",
    "strong",
    "special",
    "mind",
    "behind",
    "clear",
    "tail",
    "produce",
    "fact",
    "street",
    "inch",
    "multiply",
    "nothing",
    "course",
    "stay",
    "wheel",
    "full",
    "force",
    "blue",
    "object",
    "decide",
    "surface",
    "deep",
    "moon",
    "island",
    "foot",
    "system",
    "busy",
    "test",
    "record",
    "boat",
    "common",
    "gold",
    "possible",
    "plane",
    "stead",
    "dry",
    "wonder",
    "laugh",
    "thousand",
    "ago",
    "ran",
    "check",
    "game",
    "shape",
    "equate",
    "miss",
    "brought",
    "heat",
    "snow",
    "tire",
    "bring",
    "yes",
    "distant",
    "fill",
    "east",
    "paint",
    "language",
    "among",
    "thank",
    "please",
    "welcome",
    "receipt",
    "invoice",
    "customer",
    "service",
    "company",
    "limited",
    "description",
    "quantity",
    "item",
    "items",
    "goods",
    "payment",
    "method",
    "cash",
    "card",
    "visa",
    "received",
    "signature",
    "approved",
    "copy",
    "original",
    "subject",
    "dear",
    "sincerely",
    "regards",
    "best",
    "wishes",
    "attention",
    "notes",
    "terms",
    "conditions",
    "thank",
    "shopping",
    "store",
    "manager",
    "cashier",
    "member",
    "points",
    "balance",
    "report",
    "summary",
    "meeting",
    "agenda",
    "project",
    "team",
    "office",
    "department",
    "sales",
    "account",
    "information",
    "details",
    "total",
    "price",
]

# Nouns/words that look like addresses, ids or money but appear in "other" text.
OTHER_EN_TEMPLATES = [
    "Thank you for your purchase",
    "Please keep this receipt",
    "Customer copy",
    "Merchant copy",
    "Welcome to our store",
    "All sales are final",
    "Have a nice day",
    "Terms and conditions apply",
    "Signature",
    "Approved",
    "Description",
    "Quantity",
    "Unit price",
    "Payment method",
    "Cashier",
    "Invoice",
    "Receipt",
    "Sales report",
    "Meeting notes",
    "Dear Sir or Madam",
    "Best regards",
    "Sincerely yours",
    "Page {a} of {b}",
    "Item {a}",
    "Qty {a}",
    "Table {a}",
    "Chapter {a}",
    "Section {a}.{b}",
    "Step {a}",
    "{a} items",
    "Room service",
    "Guest count: {a}",
]

CN_OTHER_PHRASES = [
    "谢谢惠顾",
    "欢迎光临",
    "请妥善保管小票",
    "顾客联",
    "商户存根",
    "本店商品一经售出概不退换",
    "祝您生活愉快",
    "增值税普通发票",
    "收银员",
    "商品名称",
    "数量",
    "单价",
    "付款方式",
    "现金",
    "会员积分",
    "备注",
    "签名",
    "审核",
    "开票人",
    "收款人",
    "复核",
    "销售方",
    "购买方",
    "货物或应税劳务名称",
    "规格型号",
    "单位",
    "税率",
    "税额",
    "项目名称",
    "服务内容",
    "会议纪要",
    "年度工作总结",
    "注意事项",
    "使用说明",
    "产品介绍",
    "公司简介",
    "第{a}页",
    "共{b}页",
    "第{a}章",
    "数量{a}件",
    "桌号{a}",
    "人数{a}",
    "餐饮服务",
    "办公用品",
    "技术服务费",
    "北京某某科技有限公司",
    "上海市场部",
    "人民日报",
    "中国银行",
    "招商银行",
    "中华人民共和国",
]

CN_OTHER_WORDS = [
    "我们",
    "你们",
    "今天",
    "明天",
    "学习",
    "工作",
    "生活",
    "中国",
    "世界",
    "发展",
    "经济",
    "社会",
    "文化",
    "科技",
    "公司",
    "产品",
    "服务",
    "质量",
    "客户",
    "市场",
    "管理",
    "技术",
    "创新",
    "合作",
    "项目",
    "计划",
    "会议",
    "报告",
    "通知",
    "文件",
    "资料",
    "信息",
    "系统",
    "网络",
    "数据",
    "安全",
    "教育",
    "学生",
    "老师",
    "学校",
    "医院",
    "健康",
    "环境",
    "保护",
    "城市",
    "农村",
    "交通",
    "天气",
    "春天",
    "夏天",
    "秋天",
    "冬天",
    "朋友",
    "家庭",
    "快乐",
    "幸福",
    "希望",
    "未来",
    "历史",
    "故事",
    "音乐",
    "电影",
    "书籍",
    "阅读",
    "写作",
    "运动",
    "旅游",
    "美食",
    "水果",
    "蔬菜",
    "咖啡",
    "茶叶",
    "重要",
    "问题",
    "方法",
    "结果",
    "原因",
    "目标",
    "任务",
    "责任",
    "机会",
    "挑战",
    "成功",
    "努力",
    "坚持",
    "认真",
    "仔细",
    "简单",
    "复杂",
    "完成",
]

CN_PROVINCES = [
    "北京市",
    "上海市",
    "天津市",
    "重庆市",
    "广东省",
    "浙江省",
    "江苏省",
    "四川省",
    "湖北省",
    "湖南省",
    "山东省",
    "河南省",
    "福建省",
    "陕西省",
    "辽宁省",
    "云南省",
]
CN_CITIES = [
    "广州市",
    "深圳市",
    "杭州市",
    "南京市",
    "苏州市",
    "成都市",
    "武汉市",
    "长沙市",
    "济南市",
    "青岛市",
    "郑州市",
    "厦门市",
    "西安市",
    "沈阳市",
    "昆明市",
    "宁波市",
    "东莞市",
]
CN_DISTRICTS = [
    "海淀区",
    "朝阳区",
    "东城区",
    "西城区",
    "浦东新区",
    "徐汇区",
    "黄浦区",
    "南山区",
    "福田区",
    "天河区",
    "越秀区",
    "西湖区",
    "鼓楼区",
    "武侯区",
    "江汉区",
    "高新区",
]
CN_ROADS = [
    "中关村大街",
    "世纪大道",
    "南京路",
    "淮海中路",
    "人民路",
    "解放路",
    "建设路",
    "中山路",
    "长安街",
    "科技园南路",
    "文三路",
    "学院路",
    "和平大道",
    "滨江大道",
    "五四路",
    "新华街",
]
CN_PLACES = ["科技大厦", "国际中心", "创业园", "花园小区", "商务楼", "金融中心", "工业园"]

EN_STREETS = [
    "Baker",
    "Main",
    "Oak",
    "Maple",
    "Park",
    "Elm",
    "High",
    "King",
    "Queen",
    "Church",
    "Market",
    "Bridge",
    "Station",
    "Mill",
    "Victoria",
    "Washington",
    "Lincoln",
    "Keyuan",
]
EN_STREET_TYPES = [
    "Street",
    "St",
    "Road",
    "Rd",
    "Avenue",
    "Ave",
    "Lane",
    "Drive",
    "Boulevard",
    "Way",
    "Place",
    "Parkway",
]
EN_CITIES = [
    ("London", None),
    ("New York", "NY"),
    ("San Francisco", "CA"),
    ("Seattle", "WA"),
    ("Boston", "MA"),
    ("Chicago", "IL"),
    ("Austin", "TX"),
    ("Mountain View", "CA"),
    ("Manchester", None),
    ("Toronto", "ON"),
    ("Sydney", "NSW"),
    ("Beijing", None),
    ("Shanghai", None),
    ("Shenzhen", None),
]


def _upper(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(n))


def _cn_number(n: int) -> str:
    """1..31 as Chinese numerals (十五, 二十一)."""
    if n < 10:
        return CN_DIGITS[n]
    tens, ones = divmod(n, 10)
    return ("" if tens == 1 else CN_DIGITS[tens]) + "十" + (CN_DIGITS[ones] if ones else "")


def _amount(rng: random.Random) -> str:
    whole = rng.choice([rng.randint(0, 99), rng.randint(100, 9999), rng.randint(10000, 999999)])
    s = f"{whole:,}" if rng.random() < 0.6 else str(whole)
    r = rng.random()
    if r < 0.75:
        s += f".{rng.randint(0, 99):02d}"
    elif r < 0.85:
        s += ".0"
    return s


def _prefixed(rng: random.Random, label: str, prefixes: Sequence[str], value: str) -> str:
    """``value`` after one of the first generator's ``prefixes``, after one of the wider
    ``field_keys.KEYS``, or alone."""
    r = rng.random()
    if r < 0.45:
        return rng.choice(prefixes) + value
    if r < 0.85:
        return key_prefix(rng, label) + value
    return value


def gen_date(rng: random.Random) -> str:
    y, m, d = rng.randint(1990, 2035), rng.randint(1, 12), rng.randint(1, 28)
    mon = MONTHS[m - 1]
    short = mon[:3]
    forms = [
        f"{y}-{m:02d}-{d:02d}",
        f"{y}/{m:02d}/{d:02d}",
        f"{y}.{m:02d}.{d:02d}",
        f"{y}-{m}-{d}",
        f"{d:02d}/{m:02d}/{y}",
        f"{m:02d}/{d:02d}/{y}",
        f"{y}年{m}月{d}日",
        f"{y}年{m:02d}月{d:02d}日",
        f"{m}月{d}日",
        f"{''.join(CN_DIGITS[int(c)] for c in str(y))}年{_cn_number(m)}月{_cn_number(d)}日",
        f"{mon} {d}, {y}",
        f"{d} {mon} {y}",
        f"{short} {d}, {y}",
        f"{short}. {d}, {y}",
        f"{WEEKDAYS[rng.randrange(7)]}, {mon} {d}, {y}",
        f"{WEEKDAYS[rng.randrange(7)][:3]}, {d} {short} {y}",
        f"{d}-{short}-{y}",
        f"{mon} {y}",
        f"{y}年{m}月",
    ]
    s = rng.choice(forms) if rng.random() < 0.6 else more_date(rng)
    if rng.random() < 0.15:
        s += f" {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}" + (
            f":{rng.randint(0, 59):02d}" if rng.random() < 0.5 else ""
        )
    prefixes = [
        "",
        "",
        "",
        "日期：",
        "日期 ",
        "开票日期：",
        "交易日期 ",
        "有效期至 ",
        "出生日期：",
        "Date: ",
        "Date ",
        "Invoice Date: ",
        "Due Date: ",
        "Issued on ",
        "Expiry date: ",
        "DATE ",
        "Delivery date: ",
        "签发日期 ",
    ]
    return _prefixed(rng, "date", prefixes, s)


def gen_money(rng: random.Random) -> str:
    a = _amount(rng)
    forms = [
        f"¥{a}",
        f"￥{a}",
        f"¥ {a}",
        f"${a}",
        f"$ {a}",
        f"USD {a}",
        f"EUR {a}",
        f"RMB {a}",
        f"CNY {a}",
        f"{a}元",
        f"{a} 元",
        f"人民币{a}元",
        f"€{a}",
        f"£{a}",
        f"{a} USD",
        f"HK${a}",
        f"-¥{a}",
    ]
    s = rng.choice(forms) if rng.random() < 0.6 else more_money(rng)
    prefixes = [
        "",
        "",
        "",
        "总计：",
        "合计 ",
        "金额：",
        "小计 ",
        "实付 ",
        "应付金额：",
        "找零 ",
        "价税合计 ",
        "单价：",
        "Total: ",
        "TOTAL ",
        "Subtotal ",
        "Amount: ",
        "Amount due: ",
        "Balance: ",
        "Price: ",
        "Tax ",
        "Paid ",
        "Change ",
        "Grand Total ",
        "Tip: ",
        "优惠 ",
        "运费 ",
    ]
    return _prefixed(rng, "money", prefixes, s)


def gen_phone(rng: random.Random) -> str:
    mob = "1" + rng.choice("3456789") + _d(rng, 9)
    area = rng.choice(["010", "021", "020", "0755", "0571", "025", "028", "027"])
    local = _d(rng, 8) if len(area) == 3 else _d(rng, 7 + rng.randint(0, 1))
    us = (str(rng.randint(201, 989)), _d(rng, 3), _d(rng, 4))
    forms = [
        mob,
        f"{mob[:3]}-{mob[3:7]}-{mob[7:]}",
        f"{mob[:3]} {mob[3:7]} {mob[7:]}",
        f"+86 {mob}",
        f"+86-{mob[:3]}-{mob[3:7]}-{mob[7:]}",
        f"{area}-{local}",
        f"({area}) {local}",
        f"{area} {local[:4]} {local[4:]}",
        f"+86 {area[1:]} {local}",
        f"400-{_d(rng, 3)}-{_d(rng, 4)}",
        f"({us[0]}) {us[1]}-{us[2]}",
        f"+1 ({us[0]}) {us[1]}-{us[2]}",
        f"{us[0]}-{us[1]}-{us[2]}",
        f"+1 {us[0]} {us[1]} {us[2]}",
        f"+44 20 {_d(rng, 4)} {_d(rng, 4)}",
    ]
    s = rng.choice(forms) if rng.random() < 0.6 else more_phone(rng)
    prefixes = [
        "",
        "",
        "Tel: ",
        "Tel ",
        "TEL: ",
        "Phone: ",
        "Phone ",
        "Mobile: ",
        "Fax: ",
        "Call us: ",
        "电话 ",
        "电话：",
        "手机：",
        "手机 ",
        "联系电话：",
        "传真：",
        "客服热线 ",
        "服务电话：",
        "Hotline: ",
    ]
    return _prefixed(rng, "phone", prefixes, s)


def gen_id(rng: random.Random) -> str:
    y = rng.randint(2015, 2030)
    forms = [
        f"{_upper(rng, 1)}{_d(rng, 7)}",
        f"{_upper(rng, 2)}{_d(rng, rng.randint(6, 10))}",
        f"{y}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}{_d(rng, 3)}",
        _d(rng, rng.randint(8, 10)),
        # a national-ID shape; one f-string split in two, evaluated in the same order
        f"{_d(rng, 6)}{rng.randint(1950, 2010)}{rng.randint(1, 12):02d}"
        f"{rng.randint(1, 28):02d}{_d(rng, 3)}{rng.choice('0123456789X')}",
        f"INV-{y}-{_d(rng, 5)}",
        f"{_upper(rng, 2)}-{y}-{_d(rng, 4)}",
        f"{_upper(rng, 2)}{_d(rng, 2)}-{_d(rng, 4)}-{_upper(rng, 2)}",
        f"SN{_d(rng, 4)}{_upper(rng, 2)}",
        f"#{_d(rng, 6)}",
        f"{_d(rng, 4)}-{_d(rng, 4)}-{_d(rng, 4)}-{_d(rng, 4)}",
        f"{_upper(rng, 3)}{_d(rng, 5)}{_upper(rng, 1)}",
        f"{_d(rng, 12)}",
    ]
    s = rng.choice(forms) if rng.random() < 0.6 else more_id(rng)
    prefixes = [
        "",
        "No. ",
        "No.",
        "NO: ",
        "ID: ",
        "ID ",
        "Order #",
        "Order No. ",
        "Invoice No. ",
        "Invoice #",
        "S/N: ",
        "Serial Number: ",
        "Ref: ",
        "Reference: ",
        "Tracking No. ",
        "Account: ",
        "Member ID ",
        "订单号 ",
        "订单号：",
        "编号：",
        "发票号码 ",
        "发票代码：",
        "身份证号：",
        "身份证 ",
        "合同编号 ",
        "流水号：",
        "单号 ",
        "会员卡号 ",
        "运单号：",
        "序列号 ",
        "工号 ",
        "学号：",
    ]
    return _prefixed(rng, "id", prefixes, s)


def gen_address(rng: random.Random) -> str:
    if rng.random() < 0.4:
        return _prefixed(rng, "address", ["", "Address: ", "地址："], more_address(rng))
    if rng.random() < 0.5:
        parts = []
        prov = rng.choice(CN_PROVINCES)
        parts.append(prov)
        if prov.endswith("省"):
            parts.append(rng.choice(CN_CITIES))
        if rng.random() < 0.85:
            parts.append(rng.choice(CN_DISTRICTS))
        if rng.random() < 0.2:
            parts = parts[1:] or parts
        parts.append(rng.choice(CN_ROADS) + f"{rng.randint(1, 999)}号")
        r = rng.random()
        if r < 0.3:
            parts.append(rng.choice(CN_PLACES) + f"{rng.randint(1, 30)}层")
        elif r < 0.55:
            parts.append(f"{rng.randint(1, 20)}栋{rng.randint(1, 30)}{rng.randint(1, 9):02d}室")
        s = "".join(parts)
        prefixes = ["", "", "地址：", "地址 ", "收货地址：", "公司地址：", "住址 ", "注册地址："]
    else:
        street = (
            f"{rng.randint(1, 2999)}{rng.choice(['', '', '', 'A', 'B'])} "
            f"{rng.choice(EN_STREETS)} {rng.choice(EN_STREET_TYPES)}"
        )
        city, state = rng.choice(EN_CITIES)
        r = rng.random()
        if r < 0.3:
            s = f"{street}, {city}"
        elif r < 0.55 and state:
            s = f"{street}, {city}, {state} {_d(rng, 5)}"
        elif r < 0.7:
            s = f"Suite {rng.randint(100, 999)}, {street}, {city}"
        elif r < 0.85:
            s = f"Room {rng.randint(101, 2099)}, Building {rng.randint(1, 12)}, {street}, {city}"
        else:
            s = f"{street}, {city} {_upper(rng, 2)}{rng.randint(1, 9)} {rng.randint(1, 9)}{_upper(rng, 2)}"
        prefixes = ["", "", "Address: ", "Ship to: ", "Bill to: ", "Add: ", "ADDRESS "]
    return rng.choice(prefixes) + s


def gen_other(rng: random.Random) -> str:
    if rng.random() < 0.45:
        return more_other(rng)
    r = rng.random()
    a, b = rng.randint(1, 20), rng.randint(1, 30)
    if r < 0.06:  # long paragraphs, so every position up to 128 tokens is trained
        if rng.random() < 0.5:
            return " ".join(rng.choice(EN_WORDS) for _ in range(rng.randint(20, 120))).capitalize() + "."
        return "".join(rng.choice(CN_OTHER_WORDS) for _ in range(rng.randint(10, 60))) + "。"
    if r < 0.3:
        n = rng.randint(1, 12)
        words = [rng.choice(EN_WORDS) for _ in range(n)]
        s = " ".join(words)
        if rng.random() < 0.5:
            s = s.capitalize()
        if rng.random() < 0.3:
            s += rng.choice([".", "!", "?", ":"])
        return s
    if r < 0.45:
        return rng.choice(OTHER_EN_TEMPLATES).format(a=a, b=b)
    if r < 0.65:
        s = rng.choice(CN_OTHER_PHRASES).format(a=a, b=b)
        if rng.random() < 0.3:
            s += rng.choice(["", "：", "。", "！"])
        return s
    if r < 0.9:
        n = rng.randint(1, 8)
        s = "".join(rng.choice(CN_OTHER_WORDS) for _ in range(n))
        if rng.random() < 0.4:
            s += rng.choice(["。", "，", "！", "？"])
        return s
    # mixed Chinese / English product lines
    return f"{rng.choice(CN_OTHER_WORDS)} {rng.choice(EN_WORDS)} {rng.choice(CN_OTHER_WORDS)}"


GENERATORS: dict[str, Callable[[random.Random], str]] = {
    "date": gen_date,
    "money": gen_money,
    "phone": gen_phone,
    "id": gen_id,
    "address": gen_address,
    "other": gen_other,
}


def read_labelled(path: str, columns: int = 2) -> list[tuple[str, ...]]:
    """The rows of a ``label<TAB>text[<TAB>...]`` file (``#`` lines are comments), each
    ``columns`` long; an unknown label or a short row is an error naming the file and line."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\r\n")
            if not line or line.startswith("#"):
                continue
            row = tuple(line.split("\t"))
            if len(row) != columns or row[0] not in LABELS or not row[1].strip():
                raise ValueError(
                    f"{path}:{n}: expected {columns} TAB-separated columns, a label of {LABELS} then text; got {line!r}"
                )
            rows.append(row)
    return rows


def generate(n_per_label: int, seed: int) -> list[tuple[str, int]]:
    """``n_per_label`` lines of each label, shuffled: [(text, label_index)]."""
    rng = random.Random(seed)
    data = [(GENERATORS[lab](rng), i) for i, lab in enumerate(LABELS) for _ in range(n_per_label)]
    rng.shuffle(data)
    return data


def vocabulary_words() -> list[str]:
    """Lower-case English words the vocab should hold whole (sorted, unique)."""
    words = set(w.lower() for w in EN_WORDS)
    for group in (MONTHS, WEEKDAYS, EN_STREETS, EN_STREET_TYPES, [c for c, _ in EN_CITIES], OTHER_EN_TEMPLATES):
        for phrase in group:
            for w in phrase.replace(",", " ").replace(".", " ").split():
                if w.isalpha() and w.isascii():
                    words.add(w.lower())
    for keys in KEYS.values():
        for key in keys:
            words.update(w.lower() for w in key.replace(".", " ").split() if w.isalpha() and w.isascii())
    words.update(m[:3].lower() for m in MONTHS)
    words.update(d[:3].lower() for d in WEEKDAYS)
    words.update(
        [
            "tel",
            "phone",
            "mobile",
            "fax",
            "hotline",
            "call",
            "date",
            "invoice",
            "order",
            "no",
            "id",
            "ref",
            "serial",
            "number",
            "tracking",
            "account",
            "member",
            "total",
            "subtotal",
            "amount",
            "due",
            "balance",
            "price",
            "tax",
            "paid",
            "change",
            "grand",
            "tip",
            "usd",
            "eur",
            "rmb",
            "cny",
            "hk",
            "inv",
            "sn",
            "address",
            "ship",
            "bill",
            "add",
            "suite",
            "room",
            "building",
            "issued",
            "expiry",
            "delivery",
        ]
    )
    return sorted(words)
