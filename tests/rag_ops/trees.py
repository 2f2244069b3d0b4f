"""Generated source trees for the brain tests: several languages, docs, secrets, vendored and ignored files."""

from __future__ import annotations

from pathlib import Path

SECRET_MARKER = "SUPERSECRET_TOKEN_93f1"

FILES: dict[str, str] = {
    "auth/passwords.py": '''"""Password hashing and verification for user accounts."""

import hashlib
import hmac

from auth.tokens import issue_token

ITERATIONS = 200_000


def hash_password(password: str, salt: bytes) -> bytes:
    """Derive a slow salted hash of a user's password with PBKDF2 so stolen hashes are hard to crack."""
    return hashlib.pbkdf2_hmac("sha256", password.encode(), salt, ITERATIONS)


def verify_password(password: str, salt: bytes, expected: bytes) -> bool:
    """Check a login attempt against the stored password hash in constant time."""
    return hmac.compare_digest(hash_password(password, salt), expected)


class LoginService:
    """Authenticates users and hands out session tokens."""

    def login(self, user: str, password: str, salt: bytes, stored: bytes) -> str | None:
        """Log a user in: verify the password, then issue a session token."""
        if verify_password(password, salt, stored):
            return issue_token(user)
        return None
''',
    "auth/tokens.py": '''"""Session tokens."""

import secrets


def issue_token(user: str) -> str:
    """Create a random session token for a user."""
    return f"{user}:{secrets.token_hex(16)}"
''',
    "auth/__init__.py": "",
    "web/server.js": """// HTTP server routes for the shop front end.
const { renderInvoice } = require('./invoice');

/** Start the HTTP server and register routes. */
function startServer(port) {
  return listen(port, handleRequest);
}

const handleRequest = (req, res) => {
  res.end(renderInvoice(req.body));
};

class Router {
  route(path) { return path.split('/'); }
}
module.exports = { startServer, Router };
""",
    "web/invoice.js": """/** Render an invoice as HTML with line items and totals. */
function renderInvoice(order) {
  return `<h1>${order.id}</h1>`;
}
module.exports = { renderInvoice };
""",
    "web/cart.ts": """import { renderInvoice } from './invoice';

/** A shopping cart line item. */
export interface LineItem { sku: string; quantity: number; price: number }

/** Compute the total price of the cart including tax. */
export function cartTotal(items: LineItem[], taxRate: number): number {
  return items.reduce((sum, item) => sum + item.price * item.quantity, 0) * (1 + taxRate);
}

export class Cart {
  items: LineItem[] = [];
  add(item: LineItem): void { this.items.push(item); }
  total(): number { return cartTotal(this.items, 0.2); }
}
""",
    "svc/queue.go": """package svc

import "fmt"

// Queue is a FIFO job queue for background workers.
type Queue struct{ jobs []string }

// Push appends a job to the end of the queue.
func (q *Queue) Push(job string) { q.jobs = append(q.jobs, job) }

// Drain runs every queued job and empties the queue.
func Drain(q *Queue) int {
	n := len(q.jobs)
	fmt.Println(n)
	q.jobs = nil
	return n
}
""",
    "engine/src/lib.rs": """//! Geometry engine.
use crate::shapes::area;

/// Compute the area of a circle from its radius.
pub fn circle_area(radius: f64) -> f64 {
    std::f64::consts::PI * radius * radius
}

pub struct Point { pub x: f64, pub y: f64 }

impl Point {
    /// Euclidean distance between two points.
    pub fn distance(&self, other: &Point) -> f64 { ((self.x - other.x).powi(2) + (self.y - other.y).powi(2)).sqrt() }
}
""",
    "engine/src/shapes.rs": """/// Area of a rectangle.
pub fn area(w: f64, h: f64) -> f64 { w * h }
""",
    "billing/src/main/java/com/shop/Billing.java": """package com.shop;

import com.shop.util.Money;

/** Billing computes invoices and applies discounts. */
public class Billing {
    public Billing() {}

    /** Apply a percentage discount to an amount. */
    public double applyDiscount(double amount, double percent) {
        return Money.round(amount * (1 - percent / 100));
    }
}
""",
    "billing/src/main/java/com/shop/util/Money.java": """package com.shop.util;

public class Money {
    public static double round(double v) { return Math.round(v * 100) / 100.0; }
}
""",
    "docs/guide.md": """Intro text before any heading.

# User guide

Welcome to the shop. See [the tokens module](../auth/tokens.py) and [site](https://example.com/docs).

## Installation

Run the installer and configure the database connection string.

```
# not a heading inside a fence
```

## Deployment

Deploy the containers to the cluster with rolling updates.
""",
    "notes.txt": "Meeting notes: the refund policy allows returns within thirty days of delivery.\n",
    "config/settings.json": '{"debug": false, "region": "eu-west-1"}\n',
    # things that must never be ingested
    ".env": f"API_KEY={SECRET_MARKER}\n",
    ".env.production": f"DB_PASSWORD={SECRET_MARKER}\n",
    "deploy/server.pem": f"-----BEGIN CERTIFICATE-----\n{SECRET_MARKER}\n-----END CERTIFICATE-----\n",
    "deploy/id_rsa": f"-----BEGIN OPENSSH PRIVATE KEY-----\n{SECRET_MARKER}\n-----END OPENSSH PRIVATE KEY-----\n",
    "deploy/backup.txt": f"-----BEGIN RSA PRIVATE KEY-----\n{SECRET_MARKER}\n-----END RSA PRIVATE KEY-----\n",
    "node_modules/leftpad/index.js": f"function leftpad() {{ return '{SECRET_MARKER}'; }}\n",
    "build/out.js": f"var x = '{SECRET_MARKER}';\n",
    ".venv/lib/site.py": f"X = '{SECRET_MARKER}'\n",
    "__pycache__/x.py": f"X = '{SECRET_MARKER}'\n",
    "generated/ignored.py": f"X = '{SECRET_MARKER}'\n",
    "logs/app.log": f"{SECRET_MARKER}\n",
    ".gitignore": "generated/\n*.log\n",
}
BINARY_FILE = "assets/logo.dat"

EXPECTED_FILES = sorted(
    path
    for path in FILES
    if not any(
        marker in path
        for marker in (".env", "deploy/", "node_modules", "build/", ".venv", "__pycache__", "generated/", ".log")
    )
)


def make_tree(root: Path, files: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in (files or FILES).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if files is None:
        (root / BINARY_FILE).parent.mkdir(parents=True, exist_ok=True)
        (root / BINARY_FILE).write_bytes(b"\x89PNG\x00\x00" + SECRET_MARKER.encode())
    return root


def make_bulk_tree(root: Path, count: int, *, words: str = "alpha") -> Path:
    """`count` small Python modules (for incremental / crash / benchmark tests)."""
    for index in range(count):
        path = root / f"pkg{index // 100}" / f"mod_{index}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f'"""Module {index} about {words}."""\n\n\n'
            f"def compute_{index}(value: int) -> int:\n"
            f'    """Compute the {words} value number {index}."""\n'
            f"    return helper_{index}(value) + {index}\n\n\n"
            f"def helper_{index}(value: int) -> int:\n    return value * 2\n\n\n"
            f"class Thing{index}:\n    def run(self) -> int:\n        return compute_{index}(1)\n",
            encoding="utf-8",
        )
    return root


SQLPARSE_PYPROJECT = """[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "sqlparse"
description = "A non-validating SQL parser."
dynamic = ["version"]

[tool.hatch.version]
path = "sqlparse/__init__.py"
"""

SQLPARSE_SPLITTER = '''"""Splits a stream of tokens into statements."""


class StatementSplitter:
    """Collects tokens until a statement ends."""

    def _reset(self):
        self.tokens = []

    def process(self, stream):
        """Yield one statement at a time."""
        self._reset()
        yield from stream
'''

SQLPARSE_FILTER = '''"""Filter number {n}."""


class Filter{n}:
    def process(self, stream):
        return stream


def process(stream):
    """The module-level helper of filter {n}."""
    return Filter{n}().process(stream)
'''


def sqlparse_tree(root: Path) -> Path:
    """A directory named `proj` holding the sqlparse project: its manifest names it sqlparse; 13 `process` methods."""
    project = root / "proj"
    (project / "sqlparse" / "engine").mkdir(parents=True)
    (project / "sqlparse" / "filters").mkdir()
    (project / "pyproject.toml").write_text(SQLPARSE_PYPROJECT, encoding="utf-8")
    (project / "sqlparse" / "__init__.py").write_text('"""sqlparse."""\n\n__version__ = "0.6.1"\n', encoding="utf-8")
    (project / "sqlparse" / "engine" / "__init__.py").write_text("", encoding="utf-8")
    (project / "sqlparse" / "engine" / "statement_splitter.py").write_text(SQLPARSE_SPLITTER, encoding="utf-8")
    (project / "sqlparse" / "filters" / "__init__.py").write_text("", encoding="utf-8")
    for n in range(6):
        (project / "sqlparse" / "filters" / f"filter{n}.py").write_text(SQLPARSE_FILTER.format(n=n), encoding="utf-8")
    return project
