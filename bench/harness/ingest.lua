-- wrk script: POST /api/events with a unique batch id per request (no duplicates).
-- Usage: wrk -s bench/harness/ingest.lua ... with env EGIS_KEY and EGIS_EVENTS (events per batch).
-- With EGIS_BODIES (a file written by bench.harness.batches: gzip bodies one after another) and
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
-- load than wrk's flat-out default (bench.harness.load's half-peak latency).
local delay_ms = tonumber(os.getenv("EGIS_DELAY_MS") or "")
if delay_ms then
  function delay()
    return delay_ms
  end
end

-- With EGIS_BROWSER, each request is a browser's as the tracker sends it: Origin, a current
-- browser's User-Agent and client hints, Accept-Language, and an X-Forwarded-For client address
-- (the server trusts one proxy hop), so the visit context is derived. With EGIS_UA_SPRAY as
-- well, every request has a User-Agent never seen before (a frozen Edge UA, which the bot
-- filter's fast path still takes, with a unique full version).
local browser = os.getenv("EGIS_BROWSER")
local spray = os.getenv("EGIS_UA_SPRAY")
local user_agent = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 " ..
  "(KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.2903.86"
local addresses = {"193.99.144.80", "8.8.8.8", "81.2.69.160", "2001:4860:4860::8888",
  "200.160.2.3", "1.1.1.1", "133.242.0.1", "196.25.1.1"}
local spray_prefix = 0

local function headers(extra)
  local all = {["Content-Type"] = "application/json", ["X-API-Key"] = key}
  for name, value in pairs(extra) do
    all[name] = value
  end
  if browser then
    all["Origin"] = "https://bench.example"
    all["User-Agent"] = user_agent
    if spray then
      all["User-Agent"] = string.format("Mozilla/5.0 (Windows NT 10.0; Win64; x64) " ..
        "AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.%d.%d",
        spray_prefix, counter)
    end
    all["Accept-Language"] = "de-DE,de;q=0.9,en;q=0.8"
    all["Sec-CH-UA-Mobile"] = "?0"
    all["Sec-CH-UA-Platform"] = '"Windows"'
    all["X-Forwarded-For"] = addresses[counter % #addresses + 1]
  end
  return all
end

local function make_events(n)
  local events = {}
  for i = 1, n do
    local query = i == 1 and "?utm_source=newsletter&utm_medium=email&utm_campaign=spring" or ""
    events[i] = string.format(
      '{"type":"pageview","timestamp":1763700000000,"pageUrl":"https://bench.example/page/%d%s",' ..
      '"pageTitle":"Page %d","referrer":"https://www.google.com/","properties":{"utm_source":"news","i":%d}}',
      i, query, i, i)
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
  -- Distinct per thread and per run: sprayed User-Agents are new to the server each time.
  math.randomseed(os.time() * 10 + thread_number)
  spray_prefix = math.random(1, 99999)
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
    return wrk.format("POST", "/api/events", headers({["Content-Encoding"] = "gzip"}),
      bodies[(counter - 1) % #bodies + 1])
  end
  local body = string.format(
    '{"id":"%s-%d","sessionId":"s-%s-%d","anonymousId":"a-%s","timestamp":1763700001000,' ..
    '"fingerprint":{"screenWidth":1280},"events":%s}',
    thread_tag, counter, thread_tag, counter % 100, thread_tag, events_json)
  return wrk.format("POST", "/api/events", headers({}), body)
end
