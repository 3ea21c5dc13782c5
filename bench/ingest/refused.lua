-- wrk script: the same POST /api/events again and again (bench.ingest.refused): the body, the key
-- and, for a browser's request, its Origin and User-Agent come from the environment. With
-- EGIS_UNKNOWN_KEYS set, each request presents a key of its own that no site has.
wrk.method = "POST"
wrk.body = os.getenv("EGIS_BODY")
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-API-Key"] = os.getenv("EGIS_KEY")
wrk.headers["Origin"] = os.getenv("EGIS_ORIGIN")
wrk.headers["User-Agent"] = os.getenv("EGIS_USER_AGENT")

local threads = 0
local sent = 0

function setup(thread)
  threads = threads + 1
  thread:set("thread_number", threads)
end

if os.getenv("EGIS_UNKNOWN_KEYS") then
  function request()
    sent = sent + 1
    wrk.headers["X-API-Key"] = string.format("egis_unknown-%d-%d", thread_number, sent)
    return wrk.format()
  end
end
