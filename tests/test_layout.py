"""The layout's rules, read from the imports of app/, blueprints/ and models/ (README "Layout";
docs/ARCHITECTURE.md).

A module at the top of app/ is shared by two or more surfaces; a folder in app/ is one domain.
Imports go one way: models import neither app nor blueprints; app does not import blueprints;
a shared module imports no domain folder; domains import each other only as the table below
allows (the command line, app/cli/, is a surface like blueprints/: it may call any domain, e.g.
`flask agents` calls app.oauth); no module imports itself back through others; no module under
app/ is longer than MAX_LINES; and the read side (app/analytics) never asks which database it
runs on: what the two databases spell differently is app/sql.py's. `create_app`
(app/__init__.py) wires everything and is exempt. Imports inside functions count like the
others.
"""
import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGES = ("app", "blueprints", "models")
FACTORY = "app"  # app/__init__.py: create_app imports every piece it wires
# Folders of app/ that are one shared module split into files, not a domain.
SHARED_PACKAGES = {"cli", "storage"}
# Of those, the operator's surface (the command line): like blueprints/ it calls the domains.
SURFACE_PACKAGES = {"cli"}
MAX_LINES = 400
DOMAIN_IMPORTS = {
    # the bot filter; the visit context of each event; its merge timer
    "tracking": {"crawlers", "context", "rollups"},
    "context": set(),
    "revenue": set(),
    "crawlers": set(),
    "rollups": set(),
    "oauth": set(),
    "retention": {"rollups", "oauth"},  # the rollups kept whole; what of OAuth has expired
    "analytics": {"revenue", "rollups"},  # minor to major units; what a read counts
    "agent": {"analytics", "crawlers", "rollups"},  # the read path of a tool call
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for package in PACKAGES
            for path in sorted((ROOT / package).rglob("*.py")) if "migrations" not in path.parts}


MODULES = _modules()


def _imports(name: str) -> set[str]:
    """The project modules `name` imports (`from app import tally` names app.tally)."""
    tree = ast.parse(MODULES[name].read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            targets = [f"{node.module}.{alias.name}" for alias in node.names]
            targets = [target if target in MODULES else node.module for target in targets]
        else:
            continue
        found.update(target for target in targets if target in MODULES and target != name)
    return found


GRAPH = {name: _imports(name) for name in MODULES}


def _domain(name: str) -> str | None:
    """The domain folder of app/ that holds `name`, None for a shared module or outside app/."""
    parts = name.split(".")
    if parts[0] != "app" or len(parts) < 2:
        return None
    is_folder = (ROOT / "app" / parts[1]).is_dir() and parts[1] not in SHARED_PACKAGES
    return parts[1] if is_folder else None


def _is_shared(name: str) -> bool:
    return name.startswith("app.") and _domain(name) is None


def test_the_tree_is_read():
    assert {"app.tracking.store", "app.agent.tools", "blueprints.events", "models.event",
            "app.errors"} <= set(MODULES)
    assert "app.tally" in GRAPH["app.errors"]
    assert _domain("app.tracking.store") == "tracking" and _domain("app.tracking") == "tracking"
    assert _is_shared("app.errors") and not _is_shared("app.crawlers.networks")
    assert _is_shared("app.cli.keys")


def test_no_import_cycles():
    graph = {name: targets for name, targets in GRAPH.items() if name != FACTORY}
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            cycle = [*path[path.index(name):], name]
            raise AssertionError("import cycle: " + " -> ".join(cycle))
        if name in done:
            return
        for target in sorted(graph.get(name, ())):
            visit(target, [*path, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])


def test_models_import_neither_app_nor_blueprints():
    wrong = {(name, target) for name, targets in GRAPH.items() if name.startswith("models")
             for target in targets if not target.startswith("models")}
    assert not wrong


def test_app_does_not_import_blueprints():
    wrong = {(name, target) for name, targets in GRAPH.items()
             if name.startswith("app") and name != FACTORY
             for target in targets if target.startswith("blueprints")}
    assert not wrong


def _is_surface(name: str) -> bool:
    return any(name == f"app.{package}" or name.startswith(f"app.{package}.")
               for package in SURFACE_PACKAGES)


def test_shared_modules_import_no_domain():
    wrong = {(name, target) for name, targets in GRAPH.items()
             if _is_shared(name) and name != FACTORY and not _is_surface(name)
             for target in targets if _domain(target) is not None}
    assert not wrong


def test_only_the_factory_imports_a_surface():
    wrong = {(name, target) for name, targets in GRAPH.items()
             if name != FACTORY and not _is_surface(name)
             for target in targets if _is_surface(target)}
    assert not wrong


def test_domains_import_each_other_one_way():
    assert set(DOMAIN_IMPORTS) == {_domain(name) for name in MODULES} - {None}
    wrong = set()
    for name, targets in GRAPH.items():
        domain = _domain(name)
        for target in targets:
            other = _domain(target)
            if domain and other and other != domain and other not in DOMAIN_IMPORTS[domain]:
                wrong.add((name, target))
    assert not wrong


def test_domain_packages_hold_a_docstring_only():
    for domain in DOMAIN_IMPORTS:
        tree = ast.parse((ROOT / "app" / domain / "__init__.py").read_text())
        assert len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr), domain
        assert ast.get_docstring(tree), domain


def test_no_module_under_app_is_over_max_lines():
    long = {str(path.relative_to(ROOT)): lines for path in sorted((ROOT / "app").rglob("*.py"))
            if (lines := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long


def test_the_read_side_never_asks_which_database_it_runs_on():
    asking = [str(path.relative_to(ROOT)) for path in sorted((ROOT / "app" / "analytics")
                                                             .rglob("*.py"))
              if "is_postgres" in path.read_text()
              or "PostgresqlDatabase" in path.read_text()]
    assert not asking
