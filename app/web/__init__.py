"""The HTTP layer every surface shares: JSON errors, request bodies, CORS, the OpenAPI document,
the schemas' fields and loading (schema), and the rate limits (limits/)."""
