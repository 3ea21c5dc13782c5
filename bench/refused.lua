-- wrk script: the same POST /api/events again and again (bench/refused.py): the body, the key
-- and, for a browser's request, its Origin and User-Agent come from the environment.
wrk.method = "POST"
wrk.body = os.getenv("EGIS_BODY")
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-API-Key"] = os.getenv("EGIS_KEY")
wrk.headers["Origin"] = os.getenv("EGIS_ORIGIN")
wrk.headers["User-Agent"] = os.getenv("EGIS_USER_AGENT")
