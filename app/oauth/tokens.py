"""OAuth access tokens as the agent endpoint takes them beside keys (app.access.auth's
require_credentials): egis's prefix, the grant of a token for PUBLIC/api/mcp, the challenge."""
from app.access.auth import TokenIssuer
from app.oauth import grants, public

ACCESS_TOKENS = TokenIssuer(
    prefix=grants.access_prefix,
    grant_of=lambda token: grants.authenticate(token, public.resource()),
    challenge=lambda invalid_token: public.challenge(invalid_token=invalid_token),
)
