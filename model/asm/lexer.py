"""Tokens of BitGrid assembly text (docs/asm.md), each with its file, line and column.

Token kinds: ``name`` (a letter or ``_``, then letters, digits, ``_`` and ``$``; ``.`` and
``-`` inside a name when a letter or digit follows, as in ``row-major``), ``number`` (decimal,
or ``0x`` hex; :attr:`Token.value` is the int), ``string`` (``"..."``, no escapes), the
punctuation ``, : ; = ( ) [ ] .. ~ ! & | ^ ?``, ``newline`` (the end of a statement) and
``end``. ``#`` and ``//`` start a comment that runs to the end of the line. A line break is
not the end of a statement inside brackets or after a token that cannot end one
(``, : = ( [ ~ ! & | ^ ?``), so long statements continue on the next line.
"""

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


_PUNCT = ("..", ",", ":", ";", "=", "(", ")", "[", "]", "~", "!", "&", "|", "^", "?")
_CONTINUES = {",", ":", "=", "(", "[", "~", "!", "&", "|", "^", "?"}


def _name_char(c):
    return c.isascii() and (c.isalnum() or c in "_$")


def tokenize(text, file="<text>"):
    """The tokens of ``text`` (a str), ending with an ``end`` token.

    :raises AsmError: for a character that starts no token or an unterminated string.
    """
    tokens = []
    depth = 0
    line, start = 1, 0          # line number and the offset where it starts
    i, size = 0, len(text)

    def where(offset):
        return Where(file, line, offset - start + 1)

    def add(kind, token_text, value, offset):
        tokens.append(Token(kind, token_text, value, where(offset)))

    while i < size:
        c = text[i]
        if c == "\n" or (c == ";" and depth == 0):
            if c == ";" or (depth == 0 and tokens and tokens[-1].kind != "newline"
                            and tokens[-1].text not in _CONTINUES):
                if not tokens or tokens[-1].kind != "newline":
                    add("newline", c, None, i)
            i += 1
            if c == "\n":
                line, start = line + 1, i
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if c == "#" or text.startswith("//", i):
            while i < size and text[i] != "\n":
                i += 1
            continue
        if c.isascii() and c.isdigit():
            j = i
            if text.startswith(("0x", "0X"), i):
                j = i + 2
                while j < size and _name_char(text[j]):
                    j += 1
                body = text[i + 2:j]
                try:
                    value = int(body, 16)
                except ValueError:
                    raise AsmError(where(i), f"{text[i:j]!r} is not a hex number") from None
            else:
                while j < size and text[j].isascii() and text[j].isdigit():
                    j += 1
                value = int(text[i:j])
            add("number", text[i:j], value, i)
            i = j
            continue
        if c.isascii() and (c.isalpha() or c == "_"):
            j = i + 1
            while j < size and (_name_char(text[j]) or (
                    text[j] in ".-" and j + 1 < size and _name_char(text[j + 1])
                    and text[j + 1] != "$" and text[j - 1] not in ".-")):
                j += 1
            add("name", text[i:j], text[i:j], i)
            i = j
            continue
        if c == '"':
            j = text.find('"', i + 1)
            newline = text.find("\n", i + 1)
            if j < 0 or (0 <= newline < j):
                raise AsmError(where(i), "unterminated string; end it with \" on the same line")
            add("string", text[i:j + 1], text[i + 1:j], i)
            i = j + 1
            continue
        for punct in _PUNCT:
            if text.startswith(punct, i):
                add(punct, punct, None, i)
                if punct in "([":
                    depth += 1
                elif punct in ")]":
                    depth = max(0, depth - 1)
                i += len(punct)
                break
        else:
            shown = c if c.isprintable() else f"U+{ord(c):04X}"
            raise AsmError(where(i), f"unexpected character {shown!r}")
    if tokens and tokens[-1].kind != "newline":
        add("newline", "", None, i)
    add("end", "", None, i)
    return tokens
