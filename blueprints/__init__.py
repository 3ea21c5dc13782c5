"""One blueprint per surface of the API; the factory registers them in this order."""
from blueprints import events, goals, ops, validate

BLUEPRINTS = (ops.bp, validate.bp, events.bp, goals.bp)
