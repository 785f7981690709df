"""Tokens of BitGrid assembly text (docs/asm.md), each with its file, line and column.

Token kinds: ``name`` (a letter or ``_``, then letters, digits, ``_`` and ``$``; ``.`` and
``-`` inside a name when a letter or digit follows, as in ``row-major``), ``number`` (decimal, a
``-`` sign allowed, or ``0x`` hex; :attr:`Token.value` is the int), ``string`` (``"..."``, no escapes), the
punctuation ``, : ; = ( ) [ ] .. ~ ! & | ^ ?``, ``newline`` (the end of a statement) and
``end``. ``#`` and ``//`` start a comment that runs to the end of the line. A line break is
not the end of a statement inside brackets or after a token that cannot end one
(``, : = ( [ ~ ! & | ^ ?``), so long statements continue on the next line.
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


class AsmError(ValueError):
    """Bad assembly text: ``str()`` is ``file:line:column: message``.

    :attr where: the :class:`Where` of the problem (``None`` for an error of the whole
        program, such as a missing ``grid`` line, then named by the file alone).
    :attr message: the message without the place.
    """

    def __init__(self, where, message):
        self.where, self.message = where, message
        super().__init__(f"{where}: {message}" if where is not None else message)


class Token(typing.NamedTuple):
    kind: str
    text: str
    value: object
    where: Where

    def __str__(self):
        if self.kind == "newline":
            return "the end of the line"
        if self.kind == "end":
            return "the end of the file"
        return repr(self.text)


_CONTINUES = {",", ":", "=", "(", "[", "~", "!", "&", "|", "^", "?"}


_TOKEN = re.compile(r"""
    (?P<space>[ \t\r\f\v]+)
  | (?P<comment>(?:\#|//)[^\n]*)
  | (?P<newline>\n|;)
  | (?P<hex>0[xX][A-Za-z0-9_$]*)
  | (?P<number>-?[0-9]+)
  | (?P<name>[A-Za-z_](?:[A-Za-z0-9_$]|[.-](?=[A-Za-z0-9_]))*)
  | (?P<string>"[^"\n]*")
  | (?P<punct>\.\.|[,:=()\[\]~!&|^?])
""", re.VERBOSE)


def tokenize(text, file="<text>"):
    """The tokens of ``text`` (a str), ending with an ``end`` token.

    :raises AsmError: for a character that starts no token or an unterminated string.
    """
    tokens = []
    append = tokens.append
    depth = 0
    line, start = 1, 0          # line number and the offset where it starts
    i, size = 0, len(text)
    match = _TOKEN.match
    while i < size:
        m = match(text, i)
        if m is None:
            where = Where(file, line, i - start + 1)
            c = text[i]
            if c == '"':
                raise AsmError(where, "unterminated string; end it with \" on the same line")
            shown = c if c.isprintable() else f"U+{ord(c):04X}"
            raise AsmError(where, f"unexpected character {shown!r}")
        kind, j = m.lastgroup, m.end()
        if kind == "space" or kind == "comment":
            i = j
            continue
        where = Where(file, line, i - start + 1)
        if kind == "newline":
            if text[i] == "\n":
                line, start = line + 1, j
                if depth or not tokens or tokens[-1].kind == "newline" \
                        or tokens[-1].text in _CONTINUES:
                    i = j
                    continue
            elif tokens and tokens[-1].kind == "newline":
                i = j
                continue
            append(Token("newline", text[i], None, where))
        elif kind == "hex":
            body = text[i + 2:j]
            try:
                value = int(body, 16)
            except ValueError:
                raise AsmError(where, f"{text[i:j]!r} is not a hex number") from None
            append(Token("number", text[i:j], value, where))
        elif kind == "number":
            append(Token("number", text[i:j], int(text[i:j]), where))
        elif kind == "name":
            append(Token("name", text[i:j], text[i:j], where))
        elif kind == "string":
            append(Token("string", text[i:j], text[i + 1:j - 1], where))
        else:
            punct = text[i:j]
            if punct in "([":
                depth += 1
            elif punct in ")]":
                depth = max(0, depth - 1)
            append(Token(punct, punct, None, where))
        i = j
    where = Where(file, line, i - start + 1)
    if tokens and tokens[-1].kind != "newline":
        append(Token("newline", "", None, where))
    append(Token("end", "", None, where))
    return tokens
