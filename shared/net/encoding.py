"""The encoding of a fetched body, found as a browser finds it (the WHATWG Encoding and HTML standards).

In order: a byte order mark; the `charset` of the Content-Type header; for HTML, the `<meta charset>` or
`<meta http-equiv="Content-Type" content="…; charset=…">` in the first 1024 bytes (the standard's prescan, which
skips comments and other tags' attributes); else UTF-8 when the bytes are valid UTF-8, and windows-1252 (the web's
default for undeclared legacy pages) when they are not. Labels are the standard's: `iso-8859-1`, `latin1` and
`us-ascii` mean windows-1252 as in every browser, and a label the standard does not know (`utf-7`, a codec name of
Python's such as `rot13`) is ignored. Decoding never fails: a byte the encoding cannot read becomes U+FFFD.
"""

from __future__ import annotations

import codecs

PRESCAN_BYTES = 1024
WHITESPACE = b"\t\n\x0c\r "
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml", "", "application/octet-stream"})
REPLACEMENT = "replacement"  # the standard's encoding for labels of encodings that are never decoded (ISO-2022-KR…)
X_USER_DEFINED = "x-user-defined"
#: The standard's encodings (by the Python codec that decodes them) and their labels.
_LABELS: dict[str, str] = {
    "utf-8": "unicode-1-1-utf-8 utf-8 utf8",
    "cp866": "866 cp866 csibm866 ibm866",
    "iso8859-2": "csisolatin2 iso-8859-2 iso-ir-101 iso8859-2 iso88592 iso_8859-2 iso_8859-2:1987 l2 latin2",
    "iso8859-3": "csisolatin3 iso-8859-3 iso-ir-109 iso8859-3 iso88593 iso_8859-3 iso_8859-3:1988 l3 latin3",
    "iso8859-4": "csisolatin4 iso-8859-4 iso-ir-110 iso8859-4 iso88594 iso_8859-4 iso_8859-4:1988 l4 latin4",
    "iso8859-5": "csisolatincyrillic cyrillic iso-8859-5 iso-ir-144 iso8859-5 iso88595 iso_8859-5 iso_8859-5:1988",
    "iso8859-6": "arabic asmo-708 csiso88596e csiso88596i csisolatinarabic ecma-114 iso-8859-6 iso-8859-6-e "
    "iso-8859-6-i iso-ir-127 iso8859-6 iso88596 iso_8859-6 iso_8859-6:1987",
    "iso8859-7": "csisolatingreek ecma-118 elot_928 greek greek8 iso-8859-7 iso-ir-126 iso8859-7 iso88597 "
    "iso_8859-7 iso_8859-7:1987 sun_eu_greek",
    "iso8859-8": "csiso88598e csisolatinhebrew hebrew iso-8859-8 iso-8859-8-e iso-ir-138 iso8859-8 iso88598 "
    "iso_8859-8 iso_8859-8:1988 visual csiso88598i iso-8859-8-i logical",
    "iso8859-10": "csisolatin6 iso-8859-10 iso-ir-157 iso8859-10 iso885910 l6 latin6",
    "iso8859-13": "iso-8859-13 iso8859-13 iso885913",
    "iso8859-14": "iso-8859-14 iso8859-14 iso885914",
    "iso8859-15": "csisolatin9 iso-8859-15 iso8859-15 iso885915 iso_8859-15 l9",
    "iso8859-16": "iso-8859-16",
    "koi8-r": "cskoi8r koi koi8 koi8-r koi8_r",
    "koi8-u": "koi8-u",
    "mac-roman": "csmacintosh mac macintosh x-mac-roman",
    "cp874": "dos-874 iso-8859-11 iso8859-11 iso885911 tis-620 windows-874",
    "cp1250": "cp1250 windows-1250 x-cp1250",
    "cp1251": "cp1251 windows-1251 x-cp1251",
    "cp1252": "ansi_x3.4-1968 ascii cp1252 cp819 csisolatin1 ibm819 iso-8859-1 iso-ir-100 iso8859-1 iso88591 "
    "iso_8859-1 iso_8859-1:1987 l1 latin1 us-ascii windows-1252 x-cp1252",
    "cp1253": "cp1253 windows-1253 x-cp1253",
    "cp1254": "cp1254 csisolatin5 iso-8859-9 iso-ir-148 iso8859-9 iso88599 iso_8859-9 iso_8859-9:1989 l5 latin5 "
    "windows-1254 x-cp1254",
    "cp1255": "cp1255 windows-1255 x-cp1255",
    "cp1256": "cp1256 windows-1256 x-cp1256",
    "cp1257": "cp1257 windows-1257 x-cp1257",
    "cp1258": "cp1258 windows-1258 x-cp1258",
    "mac-cyrillic": "x-mac-cyrillic x-mac-ukrainian",
    "gb18030": "chinese csgb2312 csiso58gb231280 gb2312 gb_2312 gb_2312-80 gbk iso-ir-58 x-gbk gb18030",
    "big5hkscs": "big5 big5-hkscs cn-big5 csbig5 x-x-big5",
    "euc-jp": "cseucpkdfmtjapanese euc-jp x-euc-jp",
    "iso2022-jp": "csiso2022jp iso-2022-jp",
    "cp932": "csshiftjis ms932 ms_kanji shift-jis shift_jis sjis windows-31j x-sjis",
    "cp949": "cseuckr csksc56011987 euc-kr iso-ir-149 korean ks_c_5601-1987 ks_c_5601-1989 ksc5601 ksc_5601 "
    "windows-949",
    REPLACEMENT: "csiso2022kr hz-gb-2312 iso-2022-cn iso-2022-cn-ext iso-2022-kr",
    "utf-16-be": "utf-16be",
    "utf-16-le": "utf-16 utf-16le",
    X_USER_DEFINED: "x-user-defined",
}
ENCODINGS = {label: encoding for encoding, labels in _LABELS.items() for label in labels.split()}
BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_BE, "utf-16-be"), (codecs.BOM_UTF16_LE, "utf-16-le"))


def encoding_of_label(label: str | bytes) -> str | None:
    """The Python codec of a WHATWG encoding label (`latin1` → cp1252), or None for a label the web does not know."""
    if isinstance(label, bytes):
        label = label.decode("latin-1")
    return ENCODINGS.get(label.strip("\t\n\x0c\r ").lower())


def sniff_encoding(body: bytes, header_charset: str | None = None, content_type: str = "") -> tuple[str, int]:
    """The codec to decode `body` with, and how many leading bytes (a BOM) to drop first."""
    for bom, encoding in BOMS:
        if body.startswith(bom):
            return encoding, len(bom)
    declared = encoding_of_label(header_charset) if header_charset else None
    if declared is None and content_type in HTML_TYPES:
        declared = prescan(body[:PRESCAN_BYTES])
    if declared is not None:
        return declared, 0
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return "cp1252", 0
    return "utf-8", 0


def decode_body(body: bytes, header_charset: str | None = None, content_type: str = "") -> str:
    """`body` as text, decoded as a browser would (see the module docstring)."""
    encoding, skip = sniff_encoding(body, header_charset, content_type)
    data = body[skip:]
    if encoding == REPLACEMENT:
        return "\ufffd" if data else ""
    if encoding == X_USER_DEFINED:
        return "".join(chr(byte) if byte < 0x80 else chr(0xF780 + byte - 0x80) for byte in data)
    return data.decode(encoding, "whatwg-c1" if encoding == "cp1252" else "replace")


def _c1_controls(error: UnicodeError) -> tuple[str, int]:
    """windows-1252's five unassigned bytes (0x81, 0x8D, 0x8F, 0x90, 0x9D) are their C1 controls on the web."""
    assert isinstance(error, UnicodeDecodeError)
    return error.object[error.start : error.end].decode("latin-1"), error.end


codecs.register_error("whatwg-c1", _c1_controls)


def prescan(head: bytes) -> str | None:
    """The encoding a `<meta>` declares in `head` (the first 1024 bytes), by the HTML standard's prescan."""
    scan = _Scan(head)
    while scan.position < len(head):
        if head.startswith(b"<!--", scan.position):
            end = head.find(b"-->", scan.position + 2)
            if end < 0:
                return None
            scan.position = end + 2
        elif head[scan.position : scan.position + 5].lower() == b"<meta" and scan.byte(5) in WHITESPACE + b"/":
            scan.position += 5
            found = _meta_encoding(scan)
            if found is not None:
                return found
        elif _starts_tag(head, scan.position):
            scan.position = _next_of(head, scan.position, WHITESPACE + b">")
            while scan.attribute() is not None:
                pass
        elif head.startswith((b"<!", b"</", b"<?"), scan.position):
            scan.position = _next_of(head, scan.position, b">")
        scan.position += 1
    return None


def _starts_tag(head: bytes, position: int) -> bool:
    """`<` and a letter, or `</` and a letter."""
    start = position + 2 if head.startswith(b"</", position) else position + 1
    return head[position : position + 1] == b"<" and head[start : start + 1].isalpha()


def _next_of(head: bytes, position: int, stops: bytes) -> int:
    while position < len(head) and head[position] not in stops:
        position += 1
    return position


def _meta_encoding(scan: _Scan) -> str | None:
    """The encoding a `<meta>` element's attributes declare, or None (the scan goes on after it)."""
    seen: set[bytes] = set()
    got_pragma = False
    need_pragma: bool | None = None
    charset: str | None = None
    while (attribute := scan.attribute()) is not None:
        name, value = attribute
        if name in seen:
            continue
        seen.add(name)
        if name == b"http-equiv":
            got_pragma = got_pragma or value == b"content-type"
        elif name == b"content" and charset is None:
            charset = _charset_in_content(value)
            need_pragma = True if charset is not None else need_pragma
        elif name == b"charset":
            charset, need_pragma = encoding_of_label(value), False
    if need_pragma is None or (need_pragma and not got_pragma) or charset is None:
        return None
    if charset in ("utf-16-be", "utf-16-le"):
        return "utf-8"  # a document that could be read to its <meta> is not UTF-16
    return "cp1252" if charset == X_USER_DEFINED else charset


def _charset_in_content(content: bytes) -> str | None:
    """The encoding named by `charset=` in a meta element's `content` (the HTML standard's algorithm)."""
    content = content.lower()
    position = 0
    while (found := content.find(b"charset", position)) >= 0:
        position = _skip(content, found + len(b"charset"), WHITESPACE)
        if content[position : position + 1] != b"=":
            continue
        position = _skip(content, position + 1, WHITESPACE)
        quote = content[position : position + 1]
        if quote in (b'"', b"'"):
            end = content.find(quote, position + 1)
            return encoding_of_label(content[position + 1 : end]) if end >= 0 else None
        end = _next_of(content, position, WHITESPACE + b";")
        return encoding_of_label(content[position:end]) if end > position else None
    return None


def _skip(data: bytes, position: int, skipped: bytes) -> int:
    while position < len(data) and data[position] in skipped:
        position += 1
    return position


class _Scan:
    """A position in the bytes prescanned, and the standard's "get an attribute" from there."""

    def __init__(self, head: bytes) -> None:
        self.head = head
        self.position = 0

    def byte(self, offset: int = 0) -> bytes:
        return self.head[self.position + offset : self.position + offset + 1]

    def attribute(self) -> tuple[bytes, bytes] | None:
        """The next attribute (name and value, lower-cased), or None at `>` or at the end of the bytes."""
        self.position = _skip(self.head, self.position, WHITESPACE + b"/")
        if self.byte() in (b">", b""):
            return None
        name = self._name()
        if name is None:
            return None
        self.position = _skip(self.head, self.position, WHITESPACE)
        if self.byte() != b"=":
            return name, b""
        self.position = _skip(self.head, self.position + 1, WHITESPACE)
        return name, self._value()

    def _name(self) -> bytes | None:
        start = self.position
        self.position += 1  # the first byte belongs to the name, even a "="
        self.position = _next_of(self.head, self.position, WHITESPACE + b"/>=")
        return self.head[start : self.position].lower() if self.position < len(self.head) else None

    def _value(self) -> bytes:
        quote = self.byte()
        if quote in (b'"', b"'"):
            end = self.head.find(quote, self.position + 1)
            end = len(self.head) if end < 0 else end
            value = self.head[self.position + 1 : end]
            self.position = end + 1
            return value.lower()
        start = self.position
        self.position = _next_of(self.head, self.position, WHITESPACE + b">")
        return self.head[start : self.position].lower()
