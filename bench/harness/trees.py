"""The trees a benchmark compares: this checkout and a base (another commit, extracted with
`git archive`, or a directory), and running another tree's code in this process."""
import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.harness import ROOT


def git(*args: str) -> bytes:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True,
                          capture_output=True).stdout


def base_ref(args: argparse.Namespace) -> str:
    """The base's commit: --base-ref, or where this branch forked from main."""
    ref = args.base_ref or git("merge-base", "HEAD", "main").decode().strip()
    return git("rev-parse", "--short", ref).decode().strip()


def base_root(args: argparse.Namespace, scratch: str) -> Path:
    """The base tree: --base-dir, or base_ref's tree extracted into `scratch`."""
    if args.base_dir:
        return Path(args.base_dir)
    target = Path(scratch) / "base"
    extract(base_ref(args), target)
    return target


def extract(ref: str, target: Path) -> None:
    """Commit `ref`'s tree, `git archive`d into the new directory `target`."""
    target.mkdir()
    subprocess.run(["tar", "-x", "-C", str(target)], input=git("archive", ref), check=True)


def export(ref: str) -> tuple[Path, str]:
    """A clean copy of commit `ref`'s tree in a temporary directory (kept for the next run of
    the same commit), and the commit's id."""
    commit = git("rev-parse", ref).decode().strip()
    target = Path(tempfile.gettempdir()) / f"egis-tree-{commit[:12]}"
    if not target.exists():
        extract(commit, target)
    return target, commit


def tree_commit(tree: Path) -> str:
    """The tree's commit, short, and whether its tracked files differ from it."""
    def tree_git(*command: str) -> str:
        return subprocess.run(["git", "-C", str(tree), *command], capture_output=True,
                              text=True).stdout.strip()

    dirty = tree_git("status", "--porcelain", "--untracked-files=no")
    return tree_git("rev-parse", "--short=12", "HEAD") + (
        " with uncommitted changes" if dirty else "")


def base_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base-ref", help="git ref of the base tree (default: git merge-base "
                                           "HEAD main)")
    parser.add_argument("--base-dir", help="a base tree already extracted (instead of a ref)")


def run_tree(tree: Path) -> None:
    """Make `tree`'s app/, models/ and wsgi.py the ones this process imports, and its directory
    the working one: a benchmark that measures another tree's code in process (--tree, --ref,
    --root) calls this before it imports any of them. The measured code has to come first on
    sys.path, ahead of this checkout's, and no environment variable can put it there (`python -m`
    puts the working directory first). bench's own modules stay this checkout's: the package is
    already imported, so its submodules are found under its own path."""
    if Path(tree).resolve() != ROOT:
        sys.path.insert(0, str(Path(tree).resolve()))
    os.chdir(tree)
