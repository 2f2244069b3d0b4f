"""From a fetched body to what an agent reads: title, main text as markdown, links and images.

HTML: trafilatura keeps the main content and drops navigation and boilerplate; when it finds nothing worth
keeping (a bare page, a list of links), html-to-markdown converts the whole body faithfully instead. Links and
images come from the document itself (lxml), made absolute against the page (or its `<base>`), http(s) only,
without duplicates. JSON is pretty-printed, plain text passed through, PDF text read with pypdf.

Page text is untrusted data: invisible and tag characters (zero-width, bidirectional overrides, Unicode tags,
supplementary variation selectors), which can hide instructions from a human reader, are removed.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

MIN_MAIN_TEXT = 200  # below this, trafilatura's pick is too thin and the whole body is converted instead
MAX_LINKS = 1000
MAX_IMAGES = 200
_INVISIBLE = re.compile(
    "[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)
_BLANK_LINES = re.compile(r"\n{3,}")
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


class UnsupportedContent(ValueError):
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
    import trafilatura
    from lxml import html as lxml_html

    try:
        document = lxml_html.document_fromstring(html) if html.strip() else None
    except (ValueError, lxml_html.etree.ParserError):
        document = None
    base = url
    title = ""
    links: list[Link] = []
    images: list[Image] = []
    if document is not None:
        base_href = document.xpath("string(//base/@href)")
        base = urljoin(url, base_href) if base_href else url
        title = " ".join(document.xpath("string(//title)").split()) or " ".join(document.xpath("string(//h1)").split())
        links = _links(document, base)
        images = _images(document, base)
    main = trafilatura.extract(
        html, url=url, output_format="markdown", include_links=True, include_tables=True, favor_recall=True
    )
    if not main or len(main) < MIN_MAIN_TEXT:
        whole = _whole_body_markdown(html)
        if len(whole.strip()) > len((main or "").strip()):
            main = whole
    text = _BLANK_LINES.sub("\n\n", strip_invisible(main or "")).strip()
    return Extracted(title=strip_invisible(title)[:300], text=text, links=links, images=images)


def visible_text_length(html: str) -> int:
    """How much text a page shows without running scripts (to decide whether a browser is needed)."""
    from lxml import html as lxml_html

    try:
        document = lxml_html.document_fromstring(html)
    except (ValueError, lxml_html.etree.ParserError):
        return 0
    for element in document.xpath("//script|//style|//noscript|//template"):
        element.drop_tree()
    return len(" ".join(document.text_content().split()))


def _whole_body_markdown(html: str) -> str:
    import html_to_markdown

    options = html_to_markdown.ConversionOptions(extract_metadata=False, skip_images=True)
    try:
        return html_to_markdown.convert(html, options).content or ""
    except Exception:  # the converter's own errors (parse, size): fall back to trafilatura's pick
        return ""


def _links(document: object, base: str) -> list[Link]:
    seen: dict[str, Link] = {}
    for anchor in document.xpath("//a[@href]"):  # type: ignore[attr-defined]
        target = _absolute(base, anchor.get("href", ""))
        if target and target not in seen:
            seen[target] = Link(target, strip_invisible(" ".join(anchor.text_content().split()))[:200])
            if len(seen) >= MAX_LINKS:
                break
    return list(seen.values())


def _images(document: object, base: str) -> list[Image]:
    seen: dict[str, Image] = {}
    for image in document.xpath("//img[@src]"):  # type: ignore[attr-defined]
        target = _absolute(base, image.get("src", ""))
        if target and target not in seen:
            seen[target] = Image(target, strip_invisible(image.get("alt", "") or "")[:200])
            if len(seen) >= MAX_IMAGES:
                break
    return list(seen.values())


def _absolute(base: str, href: str) -> str | None:
    href = href.strip()
    if not href or href.startswith(("#", "javascript:", "mailto:", "data:", "tel:")):
        return None
    try:
        target = urljoin(base, href).split("#", 1)[0]
        scheme = urlsplit(target).scheme
    except ValueError:
        return None
    return target if scheme in ("http", "https") and len(target) <= 2048 else None


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
