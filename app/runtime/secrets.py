"""The installation's random secrets (models.InstanceSecret), read from the database once per
app and process: the rate limits' pseudonyms ("limits"), the consent form's signature
("consent"), the MCP session ids ("mcp-session")."""
from flask import current_app

from models.instance_secret import InstanceSecret


def instance_secret(name: str) -> bytes:
    """The secret called `name`, made on first use; cached on the app, so an app built on
    another database reads that database's."""
    cache: dict[str, bytes] = current_app.extensions.setdefault("egis_instance_secrets", {})
    secret = cache.get(name)
    if secret is None:
        secret = cache[name] = InstanceSecret.named(name)
    return secret
