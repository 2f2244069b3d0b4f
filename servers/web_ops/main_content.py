"""The main content of an HTML page as markdown that keeps its structure: what a developer reads in docs.

1. The region: the page's own landmark when it has one, tried in order: `[role=main]` (Sphinx and most doc
   themes), a single `<article>` (MkDocs Material, Docusaurus, blogs), rustdoc's `#main-content`, Node's
   `#apicontent`, a single `<main>` (mdBook, Javadoc, HTML5 sites), if it holds a fair share of the page's text
   outside links. Without one, the whole body, less its top-level `<header>`.
2. Cleaning, in the region: navigation, sidebars, tables of contents, breadcrumbs, pagers, footers, forms,
   buttons and scripts go (by tag, ARIA role, and the class names doc tools give them); permalink marks
   (`¶`, `#`, `§`, Sphinx's `headerlink`, Docusaurus' `hash-link`, …) go, and links that wrap a heading's own
   text are unwrapped; admonitions (note, warning, …) become block quotes under their title in bold; a code
   block becomes plain text (no links or highlighting inside) under the language its page names
   (`highlight-python3`, `language-js`, rustdoc's `rust`, …); a table whose cells hold paragraphs and flat
   lists stays a table, each block a line of its cell (`• item` lines joined by `<br>`: one row per line, which
   the brain's chunks never split); one whose cells hold code or nested tables becomes a list of readable rows,
   each cell under its column header; Javadoc's grid summaries become tables; lists whose items are sections
   (Javadoc) are unwrapped.
3. Conversion: html-to-markdown (a Rust converter) renders the region: fenced code blocks with their lines and
   indentation, GFM tables, definition lists, nested lists, headings at their levels, inline code, images as
   `![alt](url)`. Links and images are made absolute first against the page's final URL (or its `<base>`),
   fragments included, so `#dir` becomes `<page URL>#dir`; links to other schemes keep only their text.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urljoin, urlsplit

# Landmarks tried in order; the first that matches exactly one element is the region.
LANDMARKS = (
    "//*[@role='main']",
    "//article",
    "//section[@id='main-content']",
    "//div[@id='apicontent']",
    "//main",
)
MIN_LANDMARK_SHARE = 0.15
MAX_HTML_CHARS = 5_000_000
MAX_URL_CHARS = 2048
_CHROME_TAGS = frozenset(
    {"script", "style", "noscript", "template", "button", "input", "select", "textarea", "form", "nav", "footer"}
)
_CHROME_ROLES = frozenset({"navigation", "search", "banner", "contentinfo", "complementary"})
# Class names (whole words) and ids that mark navigation and page chrome in doc tools and common themes.
_CHROME_CLASSES = frozenset(
    {
        "sidebar",
        "sphinxsidebar",
        "navheader",
        "navfooter",
        "navbar",
        "breadcrumb",
        "breadcrumbs",
        "pagination",
        "pagination-nav",
        "toc",
        "table-of-contents",
        "headerlink",
        "hash-link",
        "copybutton",
        "md-clipboard",
        "md-source-file",
        "md-footer",
        "skip-link",
        "related",
        "mobile-nav",
        "menu-bar",
        "nav-wrapper",
        "nav-wide-wrapper",
        "theme-doc-breadcrumbs",
        "theme-doc-toc-mobile",
        "theme-doc-toc-desktop",
        "theme-doc-footer",
        "theme-edit-this-page",
        "test-arrow",  # rustdoc's "Run" (a playground link carrying the whole example)
        "hideme",  # rustdoc's "Expand description"
    }
)
_CHROME_IDS = frozenset({"toc", "sidebar", "gtoc", "menu-bar", "toggle-all-docs", "skip-to-content"})
_HEADINGS = ".//h1|.//h2|.//h3|.//h4|.//h5|.//h6|.//dt"
_PERMALINK_TEXT = frozenset({"", "¶", "#", "§", "🔗", "link", "permalink"})
_ADMONITION = re.compile(
    r"(?:^|\s)(?:admonition|theme-admonition|alert|note|warning|tip|hint|caution|important|danger|attention|"
    r"seealso)(?:\s|$)"
)
_ADMONITION_TITLE = re.compile(r"admonition-title|admonitionHeading|admonition-heading|alert-title")
_LANGUAGE = re.compile(r"(?:^|\s)(?:language|lang|highlight|brush:?)-?\s*([A-Za-z0-9_+#.-]+)")
_LANGUAGE_ALIASES = {"python3": "python", "py": "python", "js": "javascript", "sh": "shell"}
_NO_LANGUAGE = frozenset({"default", "none", "text", "plaintext", "plain", "nohighlight", "notranslate"})
_BARE_LANGUAGES = frozenset({"rust", "python", "java", "javascript", "json", "sql", "bash", "shell", "c", "cpp"})
_BLOCK_IN_CELL = (
    "(./tr|./thead/tr|./tbody/tr|./tfoot/tr)/td//*[self::pre or self::ul or self::ol or self::dl or self::table]"
)
_SECTION_ITEM = "./h1|./h2|./h3|./h4|./h5|./h6|./section/h1|./section/h2|./section/h3|./section/h4|./section/h5"
_GRID_COLUMNS = {"two-column-summary": 2, "three-column-summary": 3, "four-column-summary": 4}
_DROPPED_ATTRIBUTES = ("class", "id", "style", "title", "role", "tabindex", "aria-label", "aria-hidden", "lang")
_BLANK_LINES = re.compile(r"\n{3,}")
_CELL_BREAK = "\ue000"  # a line break inside a table cell (private use): `<br>` once the table is markdown
_CELL_BREAKS = re.compile(r"[ \t]*\ue000[ \t]*")
_NOT_LINES = ".//pre|.//table|.//dl|.//li//ul|.//li//ol|.//blockquote|.//h1|.//h2|.//h3|.//h4|.//h5|.//h6"


def main_region(document: Any) -> tuple[Any, bool]:
    """(the element holding the page's main content, whether a landmark named it).

    A landmark holding less than MIN_LANDMARK_SHARE of the body's text outside links (a lone `<article>` card
    in a sidebar, say) is passed over."""
    body = document.find("body")
    body = body if body is not None else document
    total = None
    for xpath in LANDMARKS:
        found = document.xpath(xpath)
        if len(found) == 1:
            total = _prose_chars(body) if total is None else total
            if _prose_chars(found[0]) >= MIN_LANDMARK_SHARE * total:
                return found[0], True
    return body, False


def _prose_chars(element: Any) -> int:
    """Characters of text outside links (navigation is mostly links)."""
    return len(element.text_content()) - sum(len(a.text_content()) for a in element.iter("a"))


def to_markdown(document: Any, resolve: Resolver) -> str:
    """The main content of a parsed page (lxml.html, changed in place) as markdown, links made absolute."""
    import html_to_markdown
    from lxml import etree
    from lxml import html as lxml_html

    region, landmark = main_region(document)
    _drop_chrome(region, landmark)
    blocks = [(pre, _language(pre)) for pre in region.xpath(".//pre[not(ancestor::pre)]")]
    _open_boxes(region)
    _flatten_structure(region)
    codes = [_as_code(pre) for pre, _ in blocks]
    etree.strip_tags(region, "span", "font", "wbr")
    etree.strip_attributes(region, *_DROPPED_ATTRIBUTES)
    for code, (_, language) in zip(codes, blocks, strict=True):
        if language:
            code.set("class", f"language-{language}")
    _absolute_links(region, resolve)
    html = lxml_html.tostring(region, encoding="unicode")[:MAX_HTML_CHARS]
    options = html_to_markdown.ConversionOptions(
        extract_metadata=False, compact_tables=True, autolinks=False, inline_data_media="alt_text_only"
    )
    try:
        markdown = html_to_markdown.convert(html, options).content or ""
    except html_to_markdown.ConversionError:  # the converter's own errors (parse, depth): the region's text
        markdown = region.text_content()
    return _BLANK_LINES.sub("\n\n", _CELL_BREAKS.sub("<br>", markdown)).strip()


def _drop_chrome(region: Any, landmark: bool) -> None:
    """Navigation and page chrome, the top-level header of a region no landmark named, and headings' permalinks."""
    for element in [e for e in region.iter() if e is not region and _is_chrome(e)]:
        element.drop_tree()
    if not landmark:
        for header in region.xpath("./header"):
            header.drop_tree()
    for heading in region.xpath(_HEADINGS):
        _drop_permalinks(heading)


def _open_boxes(region: Any) -> None:
    """Admonitions as block quotes under their title; collapsed sections shown open, their summary a line or a
    title."""
    for box in region.xpath(".//div[@class]|.//aside[@class]|.//details[@class]"):
        if _ADMONITION.search(box.get("class", "")):
            _as_quote(box)
    for summary in region.xpath(".//summary"):
        if summary.xpath("./h1|./h2|./h3|./h4|./h5|./h6|./div|./p|./section"):
            summary.drop_tag()
        else:
            summary.tag = "p"
            _embolden(summary)
    for details in region.xpath(".//details"):
        details.drop_tag()


def _flatten_structure(region: Any) -> None:
    """What markdown cannot hold as it stands: empty anchors go, grid summaries become tables, lists of sections are
    unwrapped, and tables holding blocks become lists of rows (inner tables first)."""
    for anchor in region.xpath(".//a[not(.//img) and not(normalize-space())]"):  # rustdoc's empty anchors
        anchor.drop_tree()
    for grid in region.xpath(".//div[contains(@class, '-column-summary')]"):
        _grid_as_table(grid)
    for listing in region.xpath(".//ul|.//ol"):
        items = listing.xpath("./li")
        if items and all(item.xpath(_SECTION_ITEM) for item in items):  # sections in list items (Javadoc)
            for item in items:
                item.drop_tag()
            listing.drop_tag()
    for table in reversed(region.xpath(".//table")):  # inner tables first
        if table.xpath(_BLOCK_IN_CELL) and not _lines_in_cells(table):
            _as_rows(table)


class Resolver:
    """References in one page made absolute against its base, fragments kept, each distinct one resolved once;
    `None` for what is not an http(s) URL (`javascript:`, `mailto:`, `data:`, malformed) or longer than 2048."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.page = base.split("#", 1)[0]
        self._resolved: dict[str, str | None] = {}

    def __call__(self, href: str) -> str | None:
        found = self._resolved.get(href, "")
        if found != "":
            return found
        reference = href.strip()
        target: str | None
        if reference in ("", "#") or reference.startswith(("javascript:", "mailto:", "tel:", "data:")):
            target = None
        elif reference.startswith("#"):
            target = self.page + reference
        else:
            try:
                target = urljoin(self.base, reference)
                target = target if urlsplit(target).scheme in ("http", "https") else None
            except ValueError:
                target = None
        self._resolved[href] = target if target is None or len(target) <= MAX_URL_CHARS else None
        return self._resolved[href]


def _absolute_links(region: Any, resolve: Resolver) -> None:
    """`href` and `src` made absolute (fragments kept); links to other schemes keep only their text."""
    for element in region.xpath(".//a[@href]|.//area[@href]"):
        target = resolve(element.get("href", ""))
        if target is None:
            del element.attrib["href"]
        else:
            element.set("href", target)
    for element in region.xpath(".//img[@src]"):
        source = element.get("src", "").strip()
        target = source if source.startswith("data:") else resolve(source)
        if target is None:
            element.drop_tree()
        else:
            element.set("src", target)


def _is_chrome(element: Any) -> bool:
    """Navigation or page chrome: by tag, ARIA role, id, or one of its class names."""
    if not isinstance(element.tag, str):
        return False  # comments and processing instructions
    attributes = element.attrib
    return (
        element.tag in _CHROME_TAGS
        or attributes.get("role") in _CHROME_ROLES
        or attributes.get("id") in _CHROME_IDS
        or not _CHROME_CLASSES.isdisjoint(attributes.get("class", "").split())
    )


def _drop_permalinks(heading: Any) -> None:
    own = heading.get("id") or (heading.getparent().get("id") if heading.getparent() is not None else None)
    for anchor in heading.xpath(".//a"):
        href = anchor.get("href", "")
        if " ".join(anchor.text_content().split()).lower() in _PERMALINK_TEXT:
            anchor.drop_tree()
        elif (own and href == f"#{own}") or (anchor.get("class") == "header" and href.startswith("#")):
            anchor.drop_tag()  # a link around the heading's own text (mdBook, rustdoc)


def _language(pre: Any) -> str | None:
    """The language a page names for a code block, from the classes of its `<code>`, itself or two ancestors."""
    for element in (*pre.xpath("./code"), pre, *pre.xpath("ancestor::*[position() <= 2]")):
        classes = element.get("class", "")
        match = _LANGUAGE.search(classes)
        language = match.group(1).lower() if match else None
        if language is None:
            bare = set(classes.lower().split()) & _BARE_LANGUAGES
            language = min(bare) if bare else None
        if language is not None:
            language = _LANGUAGE_ALIASES.get(language, language)
            return None if language in _NO_LANGUAGE else language
    return None


def _as_code(pre: Any) -> Any:
    """The block as one `<code>` holding its text: links and highlighting spans are not markdown inside code."""
    for br in pre.xpath(".//br"):
        br.tail = "\n" + (br.tail or "")
    text, tail = pre.text_content(), pre.tail
    pre.clear()
    pre.tail = tail
    code = pre.makeelement("code", {})
    code.text = text
    pre.append(code)
    return code


def _as_quote(box: Any) -> None:
    """An admonition as a block quote whose first line is its title in bold."""
    titles = [e for e in box.iter() if isinstance(e.tag, str) and _ADMONITION_TITLE.search(e.get("class", ""))]
    titles += box.xpath("./summary")  # MkDocs Material's collapsible admonitions
    if titles:
        titles[0].tag = "p"
        _embolden(titles[0])
    box.tag = "blockquote"
    before = box.getprevious()
    if before is not None and before.tag == "blockquote" and not (before.tail or "").strip():
        # html-to-markdown joins adjacent quotes into one; a paragraph of one invisible character (removed
        # with the other invisible characters afterwards) keeps them apart
        separator = box.makeelement("p", {})
        separator.text = "\u200b"
        box.addprevious(separator)


def _embolden(element: Any) -> None:
    """The element's text, flattened, in bold (a title)."""
    text, tail = " ".join(element.text_content().split()), element.tail
    element.clear()
    element.tail = tail
    strong = element.makeelement("strong", {})
    strong.text = text
    element.append(strong)


def _grid_as_table(grid: Any) -> None:
    """Javadoc's summary grid (`div.three-column-summary` and its cells as divs) as a table."""
    columns = next((n for name, n in _GRID_COLUMNS.items() if name in grid.get("class", "").split()), 0)
    cells = grid.xpath("./div")
    if not columns or len(cells) < columns:
        return
    table = grid.makeelement("table", {})
    for start in range(0, len(cells) - len(cells) % columns, columns):
        row = table.makeelement("tr", {})
        for cell in cells[start : start + columns]:
            cell.tag = "th" if start == 0 else "td"
            row.append(cell)
        table.append(row)
    for leftover in grid.xpath("./div"):
        table.append(leftover)
    table.tail = grid.tail
    grid.getparent().replace(grid, table)


def _lines_in_cells(table: Any) -> bool:
    """A table whose cells hold only paragraphs and flat lists, kept a table: each paragraph and list item a line of
    its cell (items as `• item`), the lines joined by `_CELL_BREAK`. False (nothing changed) for anything else."""
    cells = table.xpath("(./tr|./thead/tr|./tbody/tr|./tfoot/tr)/*[self::td or self::th]")
    if any(cell.xpath(_NOT_LINES) for cell in cells):
        return False
    for cell in cells:
        lines = _cell_lines(cell)
        for line in lines[:-1]:
            if len(line):
                line[-1].tail = (line[-1].tail or "") + _CELL_BREAK
            else:
                line.text = (line.text or "") + _CELL_BREAK
        for line in lines:
            line.drop_tag()
        for listing in cell.xpath("./ul|./ol"):
            listing.drop_tag()
    return True


def _cell_lines(cell: Any) -> list[Any]:
    """The elements of a cell that are its lines: its paragraphs, and its lists' items marked `• ` or `1. `."""
    lines: list[Any] = []
    for block in cell.xpath("./p|./div|./ul|./ol"):
        if block.tag not in ("ul", "ol"):
            lines.append(block)
            continue
        for number, item in enumerate(block.xpath("./li"), start=1):
            for paragraph in item.xpath("./p"):
                paragraph.drop_tag()
            item.text = ("• " if block.tag == "ul" else f"{number}. ") + (item.text or "")
            lines.append(item)
    return lines


def _as_rows(table: Any) -> None:
    """A table whose cells hold blocks, as a list: one item per row, each cell under its column header."""
    rows = table.xpath("./tr|./thead/tr|./tbody/tr|./tfoot/tr")
    parent = table.getparent()
    if not rows or parent is None:
        return
    header_row = rows[0] if rows[0].xpath("./th") and not rows[0].xpath("./td") else None
    headers = [" ".join(c.text_content().split()) for c in header_row.xpath("./th")] if header_row is not None else []
    listing = table.makeelement("ul", {})
    for row in rows:
        if row is header_row:
            continue
        item = listing.makeelement("li", {})
        for index, cell in enumerate(row.xpath("./td|./th")):
            cell.tag = "div"
            if index < len(headers) and headers[index]:
                label = cell.makeelement("strong", {})
                label.text, label.tail = f"{headers[index]}:", f" {cell.text or ''}"
                cell.text = None
                cell.insert(0, label)
            item.append(cell)
        listing.append(item)
    caption = table.find("caption")
    if caption is not None:
        caption.tag = "p"
        table.addprevious(caption)
    listing.tail = table.tail
    parent.replace(table, listing)
