"""Tokens of BitGrid assembly text (docs/asm.md), each with its file, line and column.

Token kinds: ``name`` (a letter or ``_``, then letters, digits, ``_`` and ``$``; ``.`` and
``-`` inside a name when a letter or digit follows, as in ``row-major``), ``number`` (decimal
with an optional ``-`` sign, or ``0x`` hex; :attr:`Token.value` is the int), ``string``
(``"..."``, no escapes), the punctuation ``, : = ( ) [ ] .. ~ ! & | ^ ?``, ``newline`` (the
end of a statement: a line break, LF, CRLF or a lone CR, or ``;``) and ``end``. ``#`` and
``//`` start a comment that runs to the end of the line. A line break is not the end of a statement inside brackets or
after a token that cannot end one (``, : = ( [ ~ ! & | ^ ?``), so long statements continue on
the next line.
"""

import re
import typing

__all__ = ["AsmError", "Token", "Where", "tokenize"]


class Where(typing.NamedTuple):
    """A place in a source file: ``file`` (as given), ``line`` and ``column`` (from 1)."""
    file: str
    line: int
    column: int

    def __str__(self):
        return f"{self.file}:{self.line}:{self.column}"


#: A run of more than 200 characters without a space, quote or colon in a message (a huge name).
_LONG = re.compile(r"""([^\s'":]{40})[^\s'":]{161,}""")


class AsmError(ValueError):
    """Bad assembly text: ``str()`` is ``file:line:column: message``.

    :attr where: the :class:`Where` of the problem (``None`` for an error of the whole
        program, such as a missing ``grid`` line, then named by the file alone).
    :attr message: the message without the place.
    """

    def __init__(self, where, message):
        message = _LONG.sub(r"\1...", message)   # a 100 kB name: its first 40 characters
        self.where, self.message = where, message
        super().__init__(f"{where}: {message}" if where is not None else message)


class Token(typing.NamedTuple):
    """One token: ``kind``, its ``text``, ``value`` (the int of a number, the text of a name,
    the contents of a string) and its place (``file``, ``line``, ``column``; :attr:`where`)."""
    kind: str
    text: str
    value: object
    file: str
    line: int
    column: int

    @property
    def where(self):
        return Where(self.file, self.line, self.column)

    def __str__(self):
        if self.kind == "newline":
            return "the end of the line"
        if self.kind == "end":
            return "the end of the file"
        return repr(self.text)


#: Decimal numbers longer than this are refused (no value of the format needs them).
_MAX_DIGITS = 40

_CONTINUES = frozenset({",", ":", "=", "(", "[", "~", "!", "&", "|", "^", "?"})


_TOKEN = re.compile(r"""
    (?P<space>[ \t\f\v]+)
  | (?P<comment>(?:\#|//)[^\r\n]*)
  | (?P<newline>\r\n?|\n|;)
  | (?P<hex>0[xX][A-Za-z0-9_$]*)
  | (?P<number>-?[0-9]+)
  | (?P<name>[A-Za-z_](?:[A-Za-z0-9_$]|[.-](?=[A-Za-z0-9_]))*)
  | (?P<string>"[^"\r\n]*")
  | (?P<punct>\.\.|[,:=()\[\]~!&|^?])
  | (?P<bad>.)
""", re.VERBOSE | re.DOTALL)


def tokenize(text, file="<text>"):
    """The tokens of ``text`` (a str), ending with an ``end`` token: a generator, so that a
    large file is never held as tokens all at once.

    :raises AsmError: for a character that starts no token or an unterminated string.
    """
    depth = 0
    line, start = 1, 0          # line number and the offset where it starts
    last_kind, last_text = "newline", ""
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "space" or kind == "comment":
            continue
        i, j = m.span()
        if kind == "newline":
            token = Token("newline", text[i], None, file, line, i - start + 1)
            if text[i] != ";":         # LF, CRLF or a lone CR
                line, start = line + 1, j
                if depth or last_kind == "newline" or last_text in _CONTINUES:
                    continue
            elif last_kind == "newline":
                continue
        elif kind == "name":
            token = Token("name", m.group(), m.group(), file, line, i - start + 1)
        elif kind == "punct":
            punct = m.group()
            if punct in "([":
                depth += 1
            elif punct in ")]":
                depth = max(0, depth - 1)
            token = Token(punct, punct, None, file, line, i - start + 1)
        elif kind == "number":
            if j - i > _MAX_DIGITS:
                raise AsmError(Where(file, line, i - start + 1),
                               f"the number {text[i:i + 20]}... is too large")
            token = Token("number", m.group(), int(m.group()), file, line, i - start + 1)
        elif kind == "hex":
            try:
                value = int(text[i + 2:j], 16)
            except ValueError:
                raise AsmError(Where(file, line, i - start + 1),
                               f"{text[i:j]!r} is not a hex number") from None
            token = Token("number", m.group(), value, file, line, i - start + 1)
        elif kind == "string":
            token = Token("string", m.group(), text[i + 1:j - 1], file, line, i - start + 1)
        else:
            where = Where(file, line, i - start + 1)
            c = text[i]
            if c == '"':
                raise AsmError(where, "unterminated string; end it with \" on the same line")
            shown = c if c.isprintable() else f"U+{ord(c):04X}"
            hint = ("; names are ASCII, but a port name may be quoted (in \"a\u00e4\" W 0)"
                    if c.isalpha() else "")
            raise AsmError(where, f"unexpected character {shown!r}{hint}")
        last_kind, last_text = token.kind, token.text
        yield token
    column = len(text) - start + 1
    if last_kind != "newline":
        yield Token("newline", "", None, file, line, column)
    yield Token("end", "", None, file, line, column)

