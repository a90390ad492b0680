"""The declared dependencies match the imports: every runtime dependency is imported by the
server's code, and the bench's own (aiosmtpd, sniffio) are declared by the bench's
distribution (bench/pyproject.toml), not Tocsin's."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "tocsin"
BENCH = ROOT / "bench"
# Used without being imported: zoneinfo reads the time zone files tzdata ships.
NOT_IMPORTED = frozenset({"tzdata"})


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=;! ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _declared(root: Path = ROOT) -> set[str]:
    """The runtime dependencies of the distribution whose pyproject.toml is in `root`."""
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    return {_name(requirement) for requirement in project["dependencies"]}


def _imported_distributions(files: list[Path]) -> set[str]:
    """The distributions providing the third-party modules these files import."""
    modules: set[str] = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    providers = importlib.metadata.packages_distributions()
    found: set[str] = set()
    for module in modules - set(sys.stdlib_module_names) - {"tocsin", "tocsin_bench"}:
        found |= {dist.lower().replace("_", "-") for dist in providers.get(module, [module])}
    return found


def _server_files() -> list[Path]:
    return list(PACKAGE.rglob("*.py"))


def test_every_runtime_dependency_is_imported_by_the_server() -> None:
    unused = _declared() - NOT_IMPORTED - _imported_distributions(_server_files())
    assert not unused, f"declared but never imported at run time: {sorted(unused)}"


def test_the_bench_declares_what_it_imports_beyond_the_server() -> None:
    bench_only = _imported_distributions(list((BENCH / "src").rglob("*.py")))
    bench_only -= _imported_distributions(_server_files())
    assert bench_only <= _declared(BENCH), sorted(bench_only - _declared(BENCH))
    assert not bench_only & _declared()
    assert "tocsin" in _declared(BENCH)


def _brought(requirement: Requirement) -> set[str]:
    """What installing `requirement` installs with it: its distribution's requirements
    without a marker, or whose marker holds for the extras asked (not the other extras')."""
    extras = requirement.extras or {""}
    brought = set()
    for needed in map(Requirement, importlib.metadata.requires(requirement.name) or []):
        if needed.marker is None or any(needed.marker.evaluate({"extra": e}) for e in extras):
            brought.add(_name(needed.name))
    return brought


def test_what_the_server_imports_is_installed_with_it() -> None:
    """Each import is declared, or comes with a declared dependency (starlette with fastapi,
    hpack with h2, uvloop with uvicorn[standard]; not httpx with fastapi, which only its
    `all` extra brings)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [Requirement(text) for text in project["dependencies"]]
    brought = {_name(requirement.name) for requirement in requirements}
    for requirement in requirements:
        brought |= _brought(requirement)
    missing = _imported_distributions(_server_files()) - brought
    assert not missing, f"imported at run time but not installed with tocsin: {sorted(missing)}"
