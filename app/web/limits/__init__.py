"""Rate limits: the named limits and their decorator (rules), where they count (stores), whom a
per-address limit counts (network). Callers import from here."""
from app.web.limits.network import client_network, pseudonym
from app.web.limits.rules import (
    BAD_KEY,
    CONNECT_CODE,
    MCP,
    OAUTH,
    OAUTH_REGISTER,
    PER_IP,
    PER_KEY,
    VALIDATE,
    Exceeded,
    RateLimit,
    count_again,
    count_against,
    limited,
    refuse_if_spent,
)
from app.web.limits.stores import StoreHealth, init_app, limiter, store_health, store_is_up

__all__ = ["BAD_KEY", "CONNECT_CODE", "MCP", "OAUTH", "OAUTH_REGISTER", "PER_IP", "PER_KEY",
           "VALIDATE", "Exceeded", "RateLimit", "StoreHealth", "client_network", "count_again",
           "count_against", "init_app", "limited", "limiter", "pseudonym", "refuse_if_spent",
           "store_health", "store_is_up"]
