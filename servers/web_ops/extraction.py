"""From a fetched body to what an agent reads: title, main text as markdown, links and images.

HTML: the page's main region as structured markdown (`main_content`: code blocks, tables, headings, links made
absolute with their fragments). The lists of links and images come from the whole document (lxml), made
absolute against the page (or its `<base>`), http(s) only, without fragments or duplicates. JSON is
pretty-printed, plain text passed through, PDF text read with pypdf.

Page text is untrusted data: invisible and tag characters (zero-width, bidirectional overrides, Unicode tags,
supplementary variation selectors), which can hide instructions from a human reader, are removed.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from mcp_sections.shared.ground.errors import SuiteError

if TYPE_CHECKING:
    from mcp_sections.servers.web_ops.main_content import Resolver

MAX_LINKS = 1000
MAX_IMAGES = 200
_INVISIBLE = re.compile(
    "[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)
_BLANK_LINES = re.compile(r"\n{3,}")
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")  # lxml refuses a str that declares its encoding
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({"text/plain", "text/markdown", "text/csv", "text/xml", "application/xml"})
JSON_TYPES = frozenset({"application/json", "application/ld+json"})


@dataclass
class Link:
    url: str
    text: str = ""


@dataclass
class Image:
    url: str
    alt: str = ""


@dataclass
class Extracted:
    title: str
    text: str
    links: list[Link] = field(default_factory=list)
    images: list[Image] = field(default_factory=list)
    kind: str = "html"  # html | json | text | pdf
    visible_chars: int | None = None  # HTML: text a reader sees without scripts (None: not HTML)


class UnsupportedContent(SuiteError, ValueError):
    """A body no extractor reads (images, archives, binaries)."""


def strip_invisible(text: str) -> str:
    """Remove characters that render as nothing but can carry hidden text."""
    return _INVISIBLE.sub("", text)


def extract(body: bytes | str, content_type: str, url: str) -> Extracted:
    """Read a body by its media type (sniffing HTML when the server says nothing useful)."""
    if content_type in JSON_TYPES or content_type.endswith("+json"):
        raw = _decode(body)
        try:
            pretty = json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
        except ValueError:
            pretty = raw
        return Extracted(title=_last_segment(url), text=strip_invisible(pretty), kind="json")
    if content_type == "application/pdf" or (isinstance(body, bytes) and body.startswith(b"%PDF-")):
        return _pdf(body if isinstance(body, bytes) else body.encode(), url)
    raw = _decode(body)
    if content_type in HTML_TYPES or (
        (not content_type or content_type == "application/octet-stream") and _looks_html(raw)
    ):
        return extract_html(raw, url)
    if content_type.startswith("text/") or content_type in TEXT_TYPES:
        return Extracted(title=_last_segment(url), text=strip_invisible(raw), kind="text")
    raise UnsupportedContent(f"{content_type or 'unknown content'} is not text, HTML, JSON or PDF")


def extract_html(html: str, url: str) -> Extracted:
    """Main content as markdown, with the page's title, links and images."""
    from lxml import html as lxml_html

    from mcp_sections.servers.web_ops.main_content import Resolver, to_markdown

    try:
        document = lxml_html.document_fromstring(_XML_DECLARATION.sub("", html, count=1)) if html.strip() else None
    except (ValueError, lxml_html.etree.ParserError):
        document = None
    if document is None:
        return Extracted(title="", text="", visible_chars=0)
    base_href = document.xpath("string(//base/@href)").strip()
    resolve = Resolver(urljoin(url, base_href) if base_href else url)
    title = " ".join(document.xpath("string(//title)").split()) or " ".join(document.xpath("string(//h1)").split())
    links = _links(document, resolve)
    images = _images(document, resolve)
    visible = _visible_chars(document)
    text = _BLANK_LINES.sub("\n\n", strip_invisible(to_markdown(document, resolve)))
    return Extracted(title=strip_invisible(title)[:300], text=text, links=links, images=images, visible_chars=visible)


def _visible_chars(document: Any) -> int:
    """How much text a page shows without running scripts (to decide whether a browser is needed)."""
    hidden = document.xpath("//script//text()|//style//text()|//noscript//text()|//template//text()")
    return len(" ".join(document.text_content().split())) - sum(len(" ".join(text.split())) for text in hidden)


def _links(document: Any, resolve: Resolver) -> list[Link]:
    seen: dict[str, Link] = {}
    for anchor in document.xpath("//a[@href]"):
        href = anchor.get("href", "")
        target = None if href.startswith("#") else resolve(href)
        target = target.split("#", 1)[0] if target else None
        if target and target not in seen:
            seen[target] = Link(target, strip_invisible(" ".join(anchor.text_content().split()))[:200])
            if len(seen) >= MAX_LINKS:
                break
    return list(seen.values())


def _images(document: Any, resolve: Resolver) -> list[Image]:
    seen: dict[str, Image] = {}
    for image in document.xpath("//img[@src]"):
        target = resolve(image.get("src", ""))
        if target and target not in seen:
            seen[target] = Image(target, strip_invisible(image.get("alt", "") or "")[:200])
            if len(seen) >= MAX_IMAGES:
                break
    return list(seen.values())


def _pdf(body: bytes, url: str) -> Extracted:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(body))
        pages = [page.extract_text() or "" for page in reader.pages[:200]]
        metadata: Any = reader.metadata or {}
        title = str(metadata.get("/Title") or "") or _last_segment(url)
    except (PdfReadError, ValueError, KeyError, TypeError) as exc:
        raise UnsupportedContent(f"the PDF could not be read ({exc})") from None
    text = "\n\n".join(f"<!-- page {n} -->\n{page.strip()}" for n, page in enumerate(pages, 1) if page.strip())
    return Extracted(title=strip_invisible(title)[:300], text=strip_invisible(text), kind="pdf")


def _decode(body: bytes | str) -> str:
    if isinstance(body, str):
        return body
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return body.decode("latin-1")


def _looks_html(text: str) -> bool:
    head = text[:1024].lstrip().lower()
    return head.startswith(("<!doctype html", "<html", "<head", "<body")) or "<html" in head


def _last_segment(url: str) -> str:
    path = urlsplit(url).path.rstrip("/")
    return path.rsplit("/", 1)[-1] or urlsplit(url).netloc
