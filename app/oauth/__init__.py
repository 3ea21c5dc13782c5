"""Agent access by OAuth 2.1: discovery, clients (registered or known by their metadata
document), consent with a one-time connect code, grants and tokens (docs/AGENTS.md, docs/API.md).
"""
