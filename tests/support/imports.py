"""What a module imports, read from its source (no import side effects)."""
import ast
import pathlib

#: modules an I/O-free machine must not import: every byte and every clock reading comes from its driver
IO_AND_TIME = frozenset({"socket", "selectors", "select", "time", "threading", "asyncio", "os"})


def top_level_imports(path):
    """The top-level package names a Python source file imports."""
    imported = set()
    for node in ast.walk(ast.parse(pathlib.Path(path).read_text())):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    return imported
