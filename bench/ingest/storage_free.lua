-- wrk script: POST /api/events with storage-free batches ("-" ids, bench.ingest.storage_free), a
-- unique batch id per request. With EGIS_VISITORS = N, request k comes from the address
-- 10.0.x.y numbered k mod N (X-Forwarded-For, behind one trusted proxy): N visitors taking
-- turns; with N = 1 every request is the same visitor.
local counter = 0
local threads_created = 0
local run = os.getenv("EGIS_RUN") or "run"
local key = os.getenv("EGIS_KEY")
local visitors = tonumber(os.getenv("EGIS_VISITORS") or "1000")

function setup(thread)
  threads_created = threads_created + 1
  thread:set("thread_tag", run .. "-" .. threads_created)
  thread:set("thread_number", threads_created)
end

function request()
  counter = counter + 1
  local visitor = (counter * 7919 + thread_number) % visitors
  local body = string.format(
    '{"id":"%s-%d","sessionId":"-","anonymousId":"-","timestamp":1763700001000,' ..
    '"events":[{"type":"pageview","timestamp":1763700000000,"pageUrl":"https://bench.example/"}]}',
    thread_tag, counter)
  return wrk.format("POST", "/api/events", {
    ["Content-Type"] = "application/json", ["X-API-Key"] = key,
    ["User-Agent"] = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
    ["X-Forwarded-For"] = string.format("10.0.%d.%d", math.floor(visitor / 256), visitor % 256)}, body)
end
