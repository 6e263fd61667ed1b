"""What a JSON request body may cost before a parser builds it: a bound on its values and
containers (from ``max_inputs_per_request``) and on its nesting, checked on the bytes.

A parser builds an object per value from as little as two bytes (``0,``: a 6 MB list of
zeros became ~440 MB). Every value but the document follows a ``[``, ``{`` or ``,``, so
``opens + commas`` bounds what it builds. Counting those bytes anywhere (three memchr
passes) over-counts, so a body within the bound by that count is within it for sure; only
one over it is walked exactly, strings skipped, never past the bound."""

from __future__ import annotations

import re

from serving.errors import BadRequest, PayloadTooLarge

#: values per input the two request formats use (Paddle: a key and a value; native: an object and its comma)
VALUES_PER_INPUT = 4
#: values for everything else a client may send (options, Paddle Serving's extra keys)
VALUES_FIXED = 256
#: request bodies nest 3 levels; anything deeper than this is not a request
MAX_DEPTH = 32

_TOKEN = re.compile(rb"[\[{,]")  # what counts towards the bound; closing brackets are counted between them
_BACKSLASH = 0x5C


def value_budget(max_inputs: int) -> int:
    """The most ``[``, ``{`` and ``,`` (outside strings) a body for ``max_inputs`` inputs may hold."""
    return VALUES_PER_INPUT * max_inputs + VALUES_FIXED


def check_json_shape(data: bytes, *, max_values: int, max_depth: int = MAX_DEPTH) -> None:
    """413 when ``data`` holds over ``max_values`` containers and separators, 400 when it nests
    deeper than ``max_depth``; return for any body within both, valid JSON or not."""
    opens = _count_upto(data, b"[", max_depth)
    opens += _count_upto(data, b"{", max_depth - opens)
    if opens <= max_depth and _count_upto(data, b",", max_values - opens) <= max_values - opens:
        return
    _Walk(data, max_values, max_depth).run()


def _count_upto(data: bytes, byte: bytes, limit: int) -> int:
    """Occurrences of ``byte`` in ``data``, or ``limit + 1`` when there are
    more: memchr finds them, and the loop never runs past the limit."""
    n, pos = 0, data.find(byte)
    while pos >= 0 and n <= limit:
        n += 1
        pos = data.find(byte, pos + 1)
    return n


class _Walk:
    """One exact pass over a body: strings skipped, structure counted."""

    def __init__(self, data: bytes, max_values: int, max_depth: int):
        self.data = data
        self.unescaped = False
        self.max_values = max_values
        self.max_depth = max_depth
        self.values = 0
        self.depth = 0

    def run(self) -> None:
        pos, strings = 0, 0
        while True:
            quote = self.data.find(b'"', pos)
            if not self._structure(pos, len(self.data) if quote < 0 else quote) or quote < 0:
                return
            strings += 1
            # keys and values each follow a bracket, a comma or a colon: more strings than that is not JSON
            if strings > 2 * self.values + 1:
                return
            pos = self._string_end(quote)
            if pos < 0:  # unterminated: the parser stops here
                return

    def _string_end(self, quote: int) -> int:
        """Index after the string opening at ``quote`` (in ``self.data``, which
        this may replace by its rest from ``quote`` on), or -1."""
        close = self.data.find(b'"', quote + 1)
        if close >= 0 and self.data[close - 1] == _BACKSLASH and not self.unescaped:
            # maybe an escaped quote: read on in a copy without them (escapes pair left to right:
            # backslash pairs first, then the quotes a backslash still escapes), so every quote delimits
            self.data = self.data[quote:].replace(b"\\\\", b"").replace(b'\\"', b"")
            self.unescaped = True
            return self._string_end(0)
        return close + 1 if close >= 0 else -1

    def _closes(self, start: int, end: int) -> int:
        return self.data.count(b"]", start, end) + self.data.count(b"}", start, end)

    def _structure(self, start: int, end: int) -> bool:
        """Count the tokens of ``data[start:end]`` (no strings in it); False
        when the document is no longer JSON there (more closed than opened)."""
        last = start
        for token in _TOKEN.finditer(self.data, start, end):
            self.depth -= self._closes(last, token.start())
            if self.depth < 0:
                return False
            if token.group() != b",":
                self.depth += 1
                if self.depth > self.max_depth:
                    raise BadRequest(f"request body nests JSON deeper than {self.max_depth} levels (the limit)")
            self.values += 1
            if self.values > self.max_values:
                raise PayloadTooLarge(
                    f"request body holds over {self.max_values} JSON values (limit: {VALUES_PER_INPUT} per "
                    f"input of max_inputs_per_request, plus {VALUES_FIXED})"
                )
            last = token.end()
        self.depth -= self._closes(last, end)
        return self.depth >= 0
