dofile("cloud/bench/report.lua") -- bench.sh runs wrk from the repository root
-- wrk script: POST /v1/visits with a fresh Idempotency-Key on each request,
-- a meeting at SITE hosted by HOST, expected now and until 12 hours on.
-- SITE may name several sites, comma-separated: each request is at the
-- next (bench.sh's BENCH_SITES).
-- Each request's visitor has its own email unless EMAIL=fixed (then every
-- visit reuses one visitor). When IDS_DIR is set, each thread appends the
-- IDs of the visits it created to IDS_DIR/<thread>.ids, one a line, for
-- checkin.lua; a run appends to what earlier runs wrote.
local key, host = os.getenv("KEY"), os.getenv("HOST")
local sites = {}
for s in string.gmatch(os.getenv("SITE"), "[^,]+") do sites[#sites + 1] = s end
local fixed = os.getenv("EMAIL") == "fixed"
local dir = os.getenv("IDS_DIR") or ""

local nthreads = 0
function setup(thread)
  thread:set("tid", nthreads)
  nthreads = nthreads + 1
end

local counter, prefix, out = 0, "", nil
local last, at, untl = -1, "", ""
math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))

local function uuid()
  local t = "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx"
  return (t:gsub("[xy]", function(c)
    local v = (c == "x") and math.random(0, 15) or math.random(8, 11)
    return string.format("%x", v)
  end))
end

function init(args)
  -- A random prefix keeps emails distinct across the warm-up and the
  -- measured run, which both count from 1.
  prefix = string.format("%06x.%d", math.random(0, 0xffffff), tid)
  if dir ~= "" then
    out = assert(io.open(dir .. "/" .. tid .. ".ids", "a"))
    out:setvbuf("line") -- nothing is lost however wrk ends
  end
end

request = function()
  counter = counter + 1
  local now = os.time()
  if now ~= last then
    last, at, untl = now, os.date("!%Y-%m-%dT%H:%M:%SZ", now), os.date("!%Y-%m-%dT%H:%M:%SZ", now + 12 * 3600)
  end
  local email = fixed and "load@example.org" or ("load." .. prefix .. "." .. counter .. "@example.org")
  local site = sites[counter % #sites + 1]
  local body = '{"site_id": "' .. site .. '", "host_id": "' .. host .. '", "visitor": {"name": "Load Visitor", "email": "' ..
    email .. '"}, "type": "meeting", "expected_at": "' .. at .. '", "expected_until": "' .. untl .. '"}'
  return wrk.format("POST", "/v1/visits", {
    ["Authorization"] = "Bearer " .. key,
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = uuid(),
  }, body)
end

response = function(status, headers, body)
  if out and status == 201 then
    local id = (headers["Location"] or ""):match("/v1/visits/(visit_%w+)$")
    if id then out:write(id, "\n") end
  end
end

done = function(summary, latency, requests)
  report(summary, latency)
end
