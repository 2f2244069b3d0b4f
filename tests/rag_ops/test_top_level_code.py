"""Code outside every named definition is in the brain (an outside tester's findings on an express app): top-level
statements as `block` scopes named from their code, express route registrations and functions held by values
(`exports.x = async () => ...`, object properties, class fields) as definitions, in JS/TS, Go, Rust and Java as in
Python; a file that holds code never ends with no node to find it by. Before, `src/app.js` (its routes at top level)
was a File node alone: `text_match="app.get"` found nothing and no question reached its routes."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_sections.servers.rag_ops.brain import Brain
from mcp_sections.servers.rag_ops.ranking import is_a, thing_asked
from mcp_sections.shared.brain.model import Node, ParsedFile
from mcp_sections.shared.brain.parsing import parse_file, tree_sitter_available
from mcp_sections.shared.brain.parsing.files import CHUNK_CHARS
from mcp_sections.shared.brain.sqlite_backend import SQLiteBrainStore
from mcp_sections.shared.embeddings.embedder import default_model_runs
from mcp_sections.shared.ground.errors import ToolFailure
from tests.in_memory import section_in_memory
from tests.stdio import call

needs_tree_sitter = pytest.mark.skipif(
    not all(tree_sitter_available().values()), reason="tree-sitter grammars not installed (pip install '.[rag]')"
)
needs_model = pytest.mark.skipif(
    not default_model_runs(), reason="needs the rag extra: pip install 'mcp-sections[rag]'"
)

EXPRESS_APP = {
    "src/app.js": """// The shop's HTTP server: middleware, the catalogue's routes and the order router.
const express = require("express");
const ordersRouter = require("./routes/orders");
const items = require("./models/items");

const app = express();
app.use(express.json());
app.use(require("morgan")("tiny"));

// List the catalogue, a page at a time.
app.get("/api/items", (req, res) => {
  const page = Number(req.query.page || 1);
  res.json(items.list({ page, size: 20 }));
});

app.post("/api/items", async (req, res) => {
  const created = await items.create(req.body);
  res.status(201).json(created);
});

app.use("/api/orders", ordersRouter);

app.use((err, req, res, next) => {
  res.status(500).json({ error: err.message });
});

module.exports = app;
""",
    "src/routes/orders.js": """const express = require("express");
const { requireAuth } = require("../middleware/auth");
const orders = require("../controllers/ordersController");

const router = express.Router();

router.get("/api/orders", requireAuth, orders.listOrders);
router.get("/api/orders/:id", requireAuth, orders.showOrder);
router.post("/api/orders", requireAuth, orders.createOrder);
router.delete("/api/orders/:id", requireAuth, orders.deleteOrder);

module.exports = router;
""",
    "src/controllers/ordersController.js": """const Order = require("../models/order");

exports.listOrders = async (req, res) => {
  const orders = await Order.find({ customer: req.user.id }).sort({ createdAt: -1 });
  res.json(orders);
};

exports.showOrder = async (req, res) => {
  const order = await Order.findOne({ _id: req.params.id, customer: req.user.id });
  if (!order) return res.status(404).json({ error: "order not found" });
  res.json(order);
};

exports.createOrder = async (req, res) => {
  const order = await Order.create({ ...req.body, customer: req.user.id });
  res.status(201).json(order);
};

exports.deleteOrder = async (req, res) => {
  const removed = await Order.findOneAndDelete({ _id: req.params.id, customer: req.user.id });
  if (!removed) return res.status(404).json({ error: "order not found" });
  res.status(204).end();
};
""",
    "src/middleware/auth.js": """const jwt = require("jsonwebtoken");

module.exports.requireAuth = (req, res, next) => {
  const token = (req.headers.authorization || "").replace("Bearer ", "");
  try {
    req.user = jwt.verify(token, process.env.JWT_SECRET);
    next();
  } catch (error) {
    res.status(401).json({ error: "sign in first" });
  }
};
""",
    "src/models/items.js": """const catalogue = [];

module.exports = {
  list: ({ page, size }) => catalogue.slice((page - 1) * size, page * size),
  create: async (item) => {
    catalogue.push(item);
    return item;
  },
};
""",
    "src/handlers/notify.ts": """import { SNSEvent } from "aws-lambda";

export const handler = async (event: SNSEvent): Promise<void> => {
  for (const record of event.Records) {
    console.log("order event", record.Sns.Message);
  }
};

export class Mailer {
  send = async (to: string, body: string): Promise<boolean> => {
    return to.length > 0 && body.length > 0;
  };
}
""",
    "src/index.ts": 'export * from "./handlers/notify";\n',
    "server.js": """const app = require("./src/app");

const port = process.env.PORT || 3000;
app.listen(port, () => console.log(`listening on ${port}`));
""",
    "README.md": "# Shop API\n\nAn express server for the shop: items and orders.\n",
    "package.json": '{"name": "shop-api", "version": "1.0.0", "main": "server.js"}\n',
    ".gitignore": "node_modules/\n",
}


def make_app(root: Path) -> Path:
    for rel, text in EXPRESS_APP.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def parsed(rel: str, text: str | None = None) -> ParsedFile:
    return parse_file("p", rel, (EXPRESS_APP[rel] if text is None else text).encode())


def scopes(rel: str, text: str | None = None) -> dict[str, tuple[str, int, int]]:
    """qualname → (kind, first line, last line)."""
    return {
        str(n.props["qualname"]): (str(n.props["kind"]), n.start_line or 0, n.end_line or 0)
        for n in parsed(rel, text).nodes
        if n.label == "Scope"
    }


@needs_tree_sitter
def test_top_level_express_routes_are_definitions_and_the_rest_blocks() -> None:
    found = scopes("src/app.js")
    assert found == {
        "express": ("block", 2, 8),  # the requires and the middleware, after the file's own comment
        "app.get /api/items": ("route", 11, 14),
        "app.post /api/items": ("route", 16, 19),
        "app.use /api/orders": ("route", 21, 21),
        "app.use": ("block", 23, 27),  # the error handler (no path), and module.exports after it
    }
    nodes = {n.props.get("qualname"): n for n in parsed("src/app.js").nodes}
    listing = nodes["app.get /api/items"]
    assert listing.props["docstring"] == "List the catalogue, a page at a time."
    assert listing.props["signature"] == 'app.get("/api/items", (req, res)'
    assert listing.embed_text == "app.js route app.get /api/items: List the catalogue, a page at a time."
    assert listing.content.startswith('app.get("/api/items"') and listing.content.endswith("});")
    assert "module.exports = app;" in nodes["app.use"].content

    routes = scopes("src/routes/orders.js")
    assert routes["router.delete /api/orders/:id"] == ("route", 10, 10)
    assert routes["express"] == ("block", 1, 5) and routes["module.exports"] == ("block", 12, 12)
    deleting = next(n for n in parsed("src/routes/orders.js").nodes if n.name == "router.delete /api/orders/:id")
    assert deleting.embed_text == "orders.js route router.delete /api/orders/:id: requireAuth, orders.deleteOrder"
    refers = {r.target for r in parsed("src/routes/orders.js").refs if r.src == deleting.id}
    assert refers == {"requireAuth", "deleteOrder"}  # the handler's callers list the route


@needs_tree_sitter
def test_functions_held_by_values_are_definitions() -> None:
    assert scopes("src/controllers/ordersController.js")["deleteOrder"] == ("function", 19, 23)
    assert scopes("src/middleware/auth.js")["requireAuth"][0] == "function"
    assert {q: k for q, (k, _, _) in scopes("src/models/items.js").items()} == {
        "list": "method",
        "create": "method",
        "catalogue": "block",
    }
    notify = scopes("src/handlers/notify.ts")
    assert notify["handler"] == ("function", 3, 7) and notify["Mailer.send"][0] == "method"
    handler = next(n for n in parsed("src/handlers/notify.ts").nodes if n.name == "handler")
    assert handler.props["signature"] == "handler = async (event: SNSEvent): Promise<void>"  # its `>` kept
    other = """const ctrl = { remove: async (req, res) => res.end(), list(req, res) {} };
Order.prototype.total = function () { return 1; };
export default async (req, res) => { res.end(); };
router.route("/carts/:id").get(showCart).delete(dropCart);
axios.get("/api/items", { params });
request(app).delete("/api/orders/1").expect(204);
"""
    assert {q: k for q, (k, _, _) in scopes("src/misc.js", other).items()} == {
        "ctrl.remove": "method",
        "ctrl.list": "method",
        "Order.total": "method",
        "misc": "function",  # a default export without a name: the file's
        "router.route /carts/:id": "route",
        "axios.get /api/items": "block",  # an HTTP client's call, and a test's, are no routes
    }


@needs_tree_sitter
@pytest.mark.parametrize(
    ("rel", "text", "expected"),
    [
        (
            "svc/errors.go",
            'package svc\n\nimport "errors"\n\n// ErrMissing: nothing there.\nvar ErrMissing = errors.New("missing")'
            "\n\nconst Retries = 3\n\nfunc Get() error { return ErrMissing }\n",
            {"ErrMissing": ("block", 5, 8), "Get": ("function", 10, 10)},
        ),
        (
            "engine/src/limits.rs",
            'use std::fmt;\n\nconst MAX: usize = 10;\nstatic NAME: &str = "x";\n'
            "type Bytes = Vec<u8>;\nmacro_rules! square { ($x:expr) => { $x * $x }; }\n",
            {"MAX": ("block", 3, 4), "Bytes": ("type", 5, 5), "square!": ("block", 6, 6)},
        ),
        (
            "src/Audited.java",
            "package shop;\n\n/** Marks an audited call. */\npublic @interface Audited { String value(); }\n",
            {"Audited": ("interface", 4, 4)},
        ),
    ],
)
def test_other_languages_keep_their_top_level_code(rel: str, text: str, expected: dict) -> None:
    assert scopes(rel, text) == expected


def test_module_level_blocks_are_cut_at_the_chunk_size() -> None:
    table = "".join(f"ROW_{i} = {{'name': 'row number {i}', 'value': {i}}}\n" for i in range(120))
    text = f'"""Rows."""\n\n{table}\n\ndef use():\n    return ROW_1\n\n\nTAIL = use()\n'
    found = scopes("rows.py", text)
    blocks = sorted((start, end, q) for q, (kind, start, end) in found.items() if kind == "block")
    assert len(blocks) >= 3 and blocks[0][2] == "ROW_0" and blocks[-1][2] == "TAIL"
    lines = text.splitlines()
    for start, end, _ in blocks[:-1]:
        size = sum(len(line) + 1 for line in lines[start - 1 : end])
        assert size < CHUNK_CHARS + 60  # the statement that reached it closes the block
    assert [(start, end) for start, end, _ in blocks[:-2]] == sorted((start, end) for start, end, _ in blocks[:-2])
    assert blocks[-2][1] == 122 and found["use"] == ("function", 125, 126)


@needs_tree_sitter
def test_a_file_of_code_always_has_a_node_beside_its_file_node() -> None:
    for rel in [*EXPRESS_APP, "pkg/__init__.py"]:
        text = "from .core import run\n" if rel.endswith(".py") else None
        nodes = parsed(rel, text).nodes
        assert any(n.label in ("Scope", "Chunk", "DocumentSection") for n in nodes), rel
    barrel = parsed("src/index.ts").nodes  # a re-export alone: a chunk, searchable by its text
    assert [(n.label, n.content) for n in barrel[1:]] == [("Chunk", 'export * from "./handlers/notify";')]


@needs_tree_sitter
def test_a_route_is_named_like_a_definition(tmp_path: Path) -> None:
    """Two routers' `router.get /` are told apart by `path::qualname`, the name an ambiguous one lists (the name of a
    route is its whole qualified name, which holds a dot and a path: it was looked up by `get /` alone)."""
    root = make_app(tmp_path / "shop")
    for rel in ("src/routes/users.js", "src/routes/carts.js"):
        (root / rel).write_text('router.get("/", async (req, res) => res.json([]));\n', encoding="utf-8")
    brain = Brain(SQLiteBrainStore(tmp_path / "brain.sqlite3"), [root], background_embeddings=False)
    try:
        brain.ingest_directory(str(root), "shop")
        deleting = brain.resolve_node("router.delete /api/orders/:id")
        assert (deleting.path, deleting.props["kind"]) == ("src/routes/orders.js", "route")
        callers, _ = brain.store.neighbors(brain.resolve_node("deleteOrder").id, ["CALLS"], "in", 1, 10)
        assert deleting.id in {node.id for node, _ in callers}  # the route calls its handler
        with pytest.raises(ToolFailure) as ambiguous:
            brain.resolve_node("router.get /")
        assert "src/routes/carts.js::router.get /" in ambiguous.value.message
        assert brain.resolve_node("src/routes/carts.js::router.get /").path == "src/routes/carts.js"
    finally:
        brain.close()


def test_a_question_naming_a_route_asks_for_route_registrations() -> None:
    assert thing_asked("where is the route that deletes an order defined") == "rout"
    assert thing_asked("which endpoint creates an order") == "endpoint"
    assert thing_asked("where is the bash completion script generated") is None

    def scope(name: str, kind: str) -> Node:
        return Node(id=name, label="Scope", project_id="p", name=name, path="src/orders.js", props={"kind": kind})

    route = scope("router.delete /api/orders/:id", "route")
    assert is_a(route, "rout") and is_a(route, "endpoint") and not is_a(route, "field")
    assert not is_a(scope("deleteOrder", "function"), "rout")


@needs_model
@needs_tree_sitter
@pytest.mark.anyio
async def test_an_express_app_is_searchable_by_meaning_and_text_through_the_tools(tmp_path: Path) -> None:
    root = make_app(tmp_path / "roots" / "shop")
    async with section_in_memory("rag_ops", "--root", str(root.parent)) as client:
        report = await call(client, "setup_project", path=str(root))
        assert report["ingest"]["searchable"]["complete"], report["ingest"]["searchable"]
        app = await call(client, "query_entities", label="Scope", path="src/app.js", limit=50)
        assert {e["name"] for e in app["entities"]} >= {"app.get /api/items", "app.post /api/items", "express"}

        found = await call(client, "brain_search", query="routes", text_match="app.get")
        assert found["results"] and found["results"][0]["relative_path"] == "src/app.js"
        assert "app.get(" in found["results"][0]["snippet"] or found["results"][0]["name"] == "app.get /api/items"

        asked = await call(client, "brain_search", query="where is the route that deletes an order defined")
        assert asked["mode"] == "hybrid"
        top = [(r["relative_path"], r["name"]) for r in asked["results"]]
        assert top[0] == ("src/routes/orders.js", "router.delete /api/orders/:id"), top[:5]

        routes = await call(client, "brain_search", query="where are the server's HTTP routes defined?")
        paths = [r["relative_path"] for r in routes["results"][:5]]
        assert "src/app.js" in paths or "src/routes/orders.js" in paths, paths

        again = await call(client, "ingest_directory", path=str(root))
        assert again["files_unchanged"] == len(EXPRESS_APP) and again["nodes_written"] == 0
        (root / "src/routes/orders.js").write_text(
            EXPRESS_APP["src/routes/orders.js"].replace("router.delete", "router.patch"), encoding="utf-8"
        )
        changed = await call(client, "ingest_directory", path=str(root))
        assert changed["files_changed"] == 1 and changed["files_unchanged"] == len(EXPRESS_APP) - 1
        patched = await call(client, "query_entities", name="router.patch /api/orders/:id")
        assert [e["relative_path"] for e in patched["entities"]] == ["src/routes/orders.js"]
