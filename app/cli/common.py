"""What every command group shares: one-line failures and a database connection."""
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, NoReturn

import click

from models import database


def fail(message: str) -> NoReturn:
    """Exit 1 with `Error: message` on stderr: one clear line, nothing on stdout."""
    click.echo(f"Error: {message}", err=True)
    sys.exit(1)


def connected(command: Callable[..., Any]) -> Callable[..., Any]:
    """Run the command inside a database connection."""

    @wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with database.connection_context():
            return command(*args, **kwargs)

    return wrapper
