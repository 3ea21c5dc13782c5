"""`pip install ./clients/python` builds the client without writing into the checkout (no build/,
no *.egg-info, no __pycache__): its build backend (flit_core) writes the wheel into pip's own
directory. Built here with the backend the test environment has (requirements-dev.txt) and no
index, so the test needs no network and takes about a second; .ci/run installs the client the
users' way (`pip install ./clients/python`, build isolation)."""
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.fixtures import ROOT

CLIENT = ROOT / "clients" / "python"


def tree(directory: Path) -> set[str]:
    """Every file and folder under `directory`, as relative paths."""
    return {str(path.relative_to(directory)) for path in directory.rglob("*")}


def test_building_the_client_leaves_the_checkout_as_it_was(tmp_path):
    before = tree(CLIENT)
    assert "pyproject.toml" in before and "egis_client/client.py" in before
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--no-index", "--disable-pip-version-check", "--quiet", "-w", str(tmp_path),
                    str(CLIENT)], check=True, timeout=120, cwd=tmp_path)

    assert tree(CLIENT) == before
    [wheel] = tmp_path.glob("egis_client-*.whl")
    with zipfile.ZipFile(wheel) as built:
        names = set(built.namelist())
    modules = {f"egis_client/{path.name}" for path in (CLIENT / "egis_client").iterdir()
               if path.suffix == ".py" or path.name == "py.typed"}
    assert modules <= names and "egis_client/py.typed" in modules
