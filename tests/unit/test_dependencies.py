"""The declared dependencies match the imports: every runtime dependency is imported by the
server's code, and the benchmark's own (httpx) stays in the `bench` extra."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "tocsin"
# Used without being imported: zoneinfo reads the time zone files tzdata ships.
NOT_IMPORTED = frozenset({"tzdata"})


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=;! ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _project() -> dict[str, object]:
    project: dict[str, object] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return project


def _declared(extra: str | None = None) -> set[str]:
    project = _project()
    if extra is None:
        requirements = project["dependencies"]
    else:
        requirements = project["optional-dependencies"][extra]  # type: ignore[index]
    return {_name(requirement) for requirement in requirements}  # type: ignore[attr-defined]


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
    for module in modules - set(sys.stdlib_module_names) - {"tocsin"}:
        found |= {dist.lower().replace("_", "-") for dist in providers.get(module, [module])}
    return found


def _server_files() -> list[Path]:
    files = PACKAGE.rglob("*.py")
    return [path for path in files if "bench" not in path.relative_to(PACKAGE).parts]


def test_every_runtime_dependency_is_imported_by_the_server() -> None:
    unused = _declared() - NOT_IMPORTED - _imported_distributions(_server_files())
    assert not unused, f"declared but never imported at run time: {sorted(unused)}"


def test_the_benchmark_only_dependencies_are_not_runtime_dependencies() -> None:
    bench_only = _imported_distributions(list((PACKAGE / "bench").rglob("*.py")))
    bench_only -= _imported_distributions(_server_files())
    assert bench_only <= _declared("bench"), sorted(bench_only - _declared("bench"))
    assert not bench_only & _declared()


def test_what_the_server_imports_is_installed_with_it() -> None:
    """Each import is declared, or comes with a declared dependency (starlette with fastapi,
    hpack with h2, uvloop with uvicorn[standard])."""
    declared = _declared()
    brought: set[str] = set(declared)
    for name in declared:
        for requirement in importlib.metadata.requires(name) or []:
            brought.add(_name(requirement))
    missing = _imported_distributions(_server_files()) - brought
    assert not missing, f"imported at run time but not installed with tocsin: {sorted(missing)}"
