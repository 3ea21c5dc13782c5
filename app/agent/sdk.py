"""The mcp SDK's sans-IO request ladder, loaded without the SDK's client and server.

Importing any `mcp.*` module first runs `mcp/__init__.py`, which imports the SDK's client and
server (anyio, httpx, starlette, uvicorn, pyjwt and the rest). This service uses one module of
the package, `mcp.shared.inbound` (the 2026-07-28 request ladder and its error-to-HTTP-status
table), which itself imports only `mcp_types`. Loaded from its file under a name of its own, the
agent layer costs a worker about half the memory and time on its first MCP call that the whole
SDK would (measured: bench/README.md, "Memory per worker"). The module's code is the SDK's,
unchanged; when the real module is already imported (the SDK's client in the tests), that one
is used.
"""
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

_SDK_MODULE = "mcp.shared.inbound"
_PRIVATE_NAME = "app.agent._mcp_shared_inbound"


def _load_inbound() -> ModuleType:
    if _SDK_MODULE in sys.modules:
        return sys.modules[_SDK_MODULE]
    package = importlib.util.find_spec("mcp")  # locates the package without running it
    if package is None or not package.submodule_search_locations:
        raise ImportError("the mcp package is not installed")
    path = Path(package.submodule_search_locations[0], "shared", "inbound.py")
    spec = importlib.util.spec_from_file_location(_PRIVATE_NAME, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {_SDK_MODULE} from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[_PRIVATE_NAME] = module  # dataclasses look their module up while it executes
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[_PRIVATE_NAME]
        raise
    return module


inbound = _load_inbound()
