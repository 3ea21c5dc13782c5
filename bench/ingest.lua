-- wrk script: POST /api/events with a unique batch id per request (no duplicates).
-- Usage: wrk -s bench/ingest.lua ... with env EGIS_KEY and EGIS_EVENTS (events per batch).
-- With EGIS_BODIES (a file written by bench/ingest.py: gzip bodies one after another) and
-- EGIS_BODY_INDEX (one "offset length" line per body), each thread sends its share of those
-- pre-compressed bodies with Content-Encoding: gzip, as the tracker does; wrk's Lua has no gzip.
local counter = 0
local threads_created = 0
local run = os.getenv("EGIS_RUN") or "run"
local key = os.getenv("EGIS_KEY")
local per_batch = tonumber(os.getenv("EGIS_EVENTS") or "50")
local bodies_path = os.getenv("EGIS_BODIES")
local index_path = os.getenv("EGIS_BODY_INDEX")
local thread_count = tonumber(os.getenv("EGIS_WRK_THREADS") or "1")
local bodies = {}
-- With EGIS_DELAY_MS, each connection waits that long after each answer: a lighter, steadier
-- load than wrk's flat-out default (bench/ingest.py's half-peak latency).
local delay_ms = tonumber(os.getenv("EGIS_DELAY_MS") or "")
if delay_ms then
  function delay()
    return delay_ms
  end
end

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
  thread:set("thread_number", threads_created)
end

function init(args)
  if not bodies_path then
    return
  end
  local blob = io.open(bodies_path, "rb"):read("*a")
  local line_number = 0
  for line in io.lines(index_path) do
    if line_number % thread_count == thread_number - 1 then
      local offset, length = line:match("(%d+) (%d+)")
      bodies[#bodies + 1] = blob:sub(offset + 1, offset + length)
    end
    line_number = line_number + 1
  end
end

function request()
  counter = counter + 1
  if #bodies > 0 then
    return wrk.format("POST", "/api/events",
      {["Content-Type"] = "application/json", ["Content-Encoding"] = "gzip", ["X-API-Key"] = key},
      bodies[(counter - 1) % #bodies + 1])
  end
  local body = string.format(
    '{"id":"%s-%d","sessionId":"s-%s-%d","anonymousId":"a-%s","timestamp":1763700001000,"events":%s}',
    thread_tag, counter, thread_tag, counter % 100, thread_tag, events_json)
  return wrk.format("POST", "/api/events",
    {["Content-Type"] = "application/json", ["X-API-Key"] = key}, body)
end
