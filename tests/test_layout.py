"""The code's layout (#28, #43): no import cycle among the product modules, the import rules of pyproject.toml's
``[tool.importlinter]`` kept, every module placed where docs/ARCHITECTURE.md says, and no product file over 600
lines."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("engines", "aworld_gui")
MAX_LINES = 600


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for top in PRODUCT:
        for path in (ROOT / top).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_init = parts[-1] == "__init__"
            out[".".join(parts[:-1] if is_init else parts)] = (path, is_init)
    return out


def _imports(module: str, path: Path, is_init: bool, known: set[str]) -> set[str]:
    """Every product module ``module`` imports, at the top or inside a function (a lazy import in a cycle is
    still a cycle: it only moves the failure to run time). Type-only imports (``if TYPE_CHECKING:``) count
    too: a module should not need its caller's type."""
    package = module if is_init else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in known:
                    found.add(sub)
                elif target in known:
                    found.add(target)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in known}
    return found - {module}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_the_cycle_finder_finds_a_cycle_and_passes_a_tree():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_no_import_cycle_among_the_product_modules():
    modules = _modules()
    graph = {m: _imports(m, path, is_init, set(modules)) for m, (path, is_init) in modules.items()}
    assert sum(len(v) for v in graph.values()) > 300  # the import reader sees the imports
    assert import_cycles(graph) == []


def lint_imports(tree: Path = ROOT) -> subprocess.CompletedProcess:
    """import-linter on ``tree``'s ``engines`` and ``aworld_gui`` (it puts the folder it runs in first on the import
    path), with this project's contracts (pyproject.toml)."""
    code = (
        "import sys; from importlinter.cli import lint_imports; "
        f"sys.exit(lint_imports(config_filename={str(ROOT / 'pyproject.toml')!r}, no_cache=True))"
    )
    return subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True, text=True, timeout=300)


def test_the_import_contracts_hold():
    done = lint_imports()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 kept, 0 broken" in done.stdout, done.stdout


def test_breaking_an_import_contract_fails_the_suite(tmp_path):
    """The real code and contracts, plus one breach of each contract made inside a function (where a lazy import
    hides from a reader of the module's top): import-linter reports each."""
    for top in PRODUCT:
        shutil.copytree(ROOT / top, tmp_path / top, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "engines" / "layer_breach.py").write_text("def f():\n    import gradio\n", encoding="utf-8")
    with (tmp_path / "aworld_gui" / "tabs" / "chat_tab.py").open("a", encoding="utf-8") as f:
        f.write("\n\ndef _breach():\n    from . import runs_tab\n")
    with (tmp_path / "aworld_gui" / "worker" / "check_tasks.py").open("a", encoding="utf-8") as f:
        f.write("\n\ndef _breach():\n    from ..core import studio\n")  # a layer importing one above it
    with (tmp_path / "engines" / "runs" / "rundir.py").open("a", encoding="utf-8") as f:
        f.write("\n\ndef _breach():\n    from ..core.prepare import prepare_run\n")
    done = lint_imports(tmp_path)
    assert done.returncode != 0
    assert "0 kept, 4 broken" in done.stdout, done.stdout
    assert "aworld_gui.worker.check_tasks -> aworld_gui.core.studio" in done.stdout, done.stdout
    assert "engines.runs.rundir -> engines.core.prepare" in done.stdout, done.stdout
    assert (
        "engines.layer_breach -> gradio" in done.stdout
        and "aworld_gui.tabs.chat_tab -> aworld_gui.tabs.runs_tab" in done.stdout
    ), done.stdout


def _contract_layers(container: str) -> list[str]:
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"][
        "contracts"
    ]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers" and c.get("containers") == [container]]
    return layers


def test_the_layers_drawn_in_the_architecture_doc_are_the_contracts():
    """docs/ARCHITECTURE.md draws the layers of ``engines`` as the contract has them, so the picture a newcomer reads
    cannot drift from what the suite enforces; and every sub-package of ``engines`` is in a layer."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    drawn = text.split("<!-- engines layers: kept equal to pyproject.toml by tests/test_layout.py -->", 1)[1]
    drawn = drawn.split("```", 2)[1].strip().splitlines()
    layers = _contract_layers("engines")
    assert drawn == layers, f"docs/ARCHITECTURE.md draws {drawn}, the contract says {layers}"
    placed = {name.strip() for layer in layers for name in layer.split("|")}
    folders = {p.parent.name for p in (ROOT / "engines").glob("*/__init__.py")}
    modules = {p.stem for p in (ROOT / "engines").glob("*.py")} - {"__init__", "__main__"}
    assert folders | modules == placed, f"in no layer: {sorted((folders | modules) - placed)}"


#: files over the limit, each at most its size when the formatter (ruff format) made it so: they may shrink, never
#: grow, and must be split along their concepts (none today)
OVER_THE_LIMIT: dict[str, int] = {}


def test_no_product_file_is_over_600_lines():
    sizes = {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines()) for p, _ in _modules().values()}
    long = {f: n for f, n in sizes.items() if n > OVER_THE_LIMIT.get(f, MAX_LINES)}
    assert long == {}, f"split these along their concepts: {long}"
    assert all(sizes.get(f, 0) > MAX_LINES for f in OVER_THE_LIMIT), (
        "a file is under the limit now: drop it from the list"
    )


def _documented() -> dict[str, set[str]]:
    """Each package folder named in docs/ARCHITECTURE.md with the module files its section names."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    out: dict[str, set[str]] = {}
    top = None
    folder = None
    for line in text.splitlines():
        if m := re.match(r"## `(engines|aworld_gui)/`", line):
            top, folder = m.group(1), m.group(1)
        elif line.startswith("## "):
            top = folder = None
        elif top and (m := re.match(r"### `([a-z_]+)/`", line)):
            folder = f"{top}/{m.group(1)}"
        elif top and (m := re.match(r"\* `(engines/[a-z_]+)/`", line)):
            folder = m.group(1)
        if folder:
            names = re.findall(r"`([a-z0-9_]+\.py)`", line)
            if line.startswith("| `") and not line.startswith("| `rewards/`"):
                names = re.findall(r"`([a-z0-9_]+\.py)`", line.split("|")[1])
            out.setdefault(folder, set()).update(names)
    return out


def test_docs_architecture_names_every_module_in_its_folder():
    documented = _documented()
    actual: dict[str, set[str]] = {}
    for path, _ in _modules().values():
        rel = path.relative_to(ROOT)
        if path.name != "__init__.py":
            actual.setdefault(str(rel.parent), set()).add(path.name)
    missing = {
        f: sorted(names - documented.get(f, set())) for f, names in actual.items() if names - documented.get(f, set())
    }
    stale = {f: sorted(names - actual.get(f, set())) for f, names in documented.items() if names - actual.get(f, set())}
    assert missing == {}, f"modules docs/ARCHITECTURE.md does not place: {missing}"
    assert stale == {}, f"docs/ARCHITECTURE.md names modules that are not there: {stale}"


def test_failure_causes_are_written_from_the_cause_enum_not_as_bare_strings():
    """#28 §4: a run's failure cause is a member of engines.runs.causes.Cause wherever product code names one (a
    misspelled "kiled" would be a cause no view knows). A string that spells a cause is allowed only where it means
    something else too: "unknown" (also a state) and "loss_not_finite" (also a diagnosis's code)."""
    from engines.runs.causes import CAUSES

    spelled = {str(c) for c in CAUSES} - {"unknown", "loss_not_finite"}
    bare = []
    for module, (path, _init) in _modules().items():
        if module == "engines.runs.causes":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            values = []
            if isinstance(node, ast.Constant) and node.value in spelled:
                values.append(node)
            elif isinstance(node, ast.keyword) and node.arg == "cause":
                values.append(node.value)
            elif isinstance(node, ast.Dict):
                values += [
                    v for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant) and k.value == "cause"
                ]
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "get" and node.args[1:]:
                if isinstance(node.args[0], ast.Constant) and node.args[0].value == "cause":
                    values.append(node.args[1])
            elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
                if any(re.search(r"""(get\(|\[)['"]cause['"]""", ast.unparse(v)) for v in node.values[:-1]):
                    values.append(node.values[-1])
            bare += [
                f"{path.relative_to(ROOT)}:{v.lineno} {v.value!r}"
                for v in values
                if isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value  # "": no cause said
            ]
    assert not bare, "causes written as bare strings (use engines.runs.causes.Cause): " + ", ".join(sorted(set(bare)))
