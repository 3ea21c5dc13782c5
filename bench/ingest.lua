-- wrk script: POST /api/events with a unique batch id per request (no duplicates).
-- Usage: wrk -s bench/ingest.lua ... with env EGIS_KEY and EGIS_EVENTS (events per batch).
local counter = 0
local threads_created = 0
local run = os.getenv("EGIS_RUN") or "run"
local key = os.getenv("EGIS_KEY")
local per_batch = tonumber(os.getenv("EGIS_EVENTS") or "50")

local function make_events(n)
  local events = {}
  for i = 1, n do
    events[i] = string.format(
      '{"type":"pageview","timestamp":1763700000000,"pageUrl":"https://bench.example/page/%d",' ..
      '"pageTitle":"Page %d","referrer":"https://www.google.com/","properties":{"utm_source":"news","i":%d}}',
      i, i, i)
  end
  return "[" .. table.concat(events, ",") .. "]"
end

local events_json = make_events(per_batch)

function setup(thread)
  threads_created = threads_created + 1
  thread:set("thread_tag", run .. "-" .. threads_created)
end

function request()
  counter = counter + 1
  local body = string.format(
    '{"id":"%s-%d","sessionId":"s-%s-%d","anonymousId":"a-%s","timestamp":1763700001000,"events":%s}',
    thread_tag, counter, thread_tag, counter % 100, thread_tag, events_json)
  return wrk.format("POST", "/api/events",
    {["Content-Type"] = "application/json", ["X-API-Key"] = key}, body)
end
