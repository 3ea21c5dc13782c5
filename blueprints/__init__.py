"""One blueprint per surface of the API; the factory registers them in this order."""
from blueprints import crawl, events, goals, mcp, oauth, ops, server, tracker, validate

BLUEPRINTS = (ops.bp, validate.bp, events.bp, goals.bp, server.bp, crawl.bp, mcp.bp, oauth.bp,
              tracker.bp)
