dofile("cloud/bench/report.lua") -- bench.sh runs wrk from the repository root
-- wrk script: POST /v1/visits/{id}/check-in (at the desk, no body) with a
-- fresh Idempotency-Key, each request on a different visit: thread k of
-- THREADS takes lines k+1, k+1+THREADS, ... of the file IDS and walks them
-- once. A visit checks in once, so a thread that runs out stops (its last
-- request checks in a visit that does not exist, a 404) rather than repeat
-- one, and the RESULT line says ran_out=1: the rate is then understated and
-- bench.sh makes more visits and measures again. wrk calls the first
-- thread's request() once before the run to check it, so that thread skips
-- its first ID; sent counts that call too.
local key = os.getenv("KEY")
local file = os.getenv("IDS")
local nthreads = tonumber(os.getenv("THREADS") or "2")

local threads = {}
function setup(thread)
  thread:set("tid", #threads)
  thread:set("sent", 0)
  thread:set("ran_out", 0)
  table.insert(threads, thread)
end

local ids, n = {}, 0
math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))

local function uuid()
  local t = "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx"
  return (t:gsub("[xy]", function(c)
    local v = (c == "x") and math.random(0, 15) or math.random(8, 11)
    return string.format("%x", v)
  end))
end

function init(args)
  local i = 0
  for line in io.lines(file) do
    if i % nthreads == tid and line ~= "" then table.insert(ids, line) end
    i = i + 1
  end
end

request = function()
  n = n + 1
  sent = n
  local id = ids[n]
  if not id then
    ran_out = 1
    wrk.thread:stop()
    id = "visit_00000000000000000000000000" -- well formed, never made
  end
  return wrk.format("POST", "/v1/visits/" .. id .. "/check-in", {
    ["Authorization"] = "Bearer " .. key,
    ["Idempotency-Key"] = uuid(),
  })
end

done = function(summary, latency, requests)
  local sent, short = 0, 0
  for _, t in ipairs(threads) do
    sent = sent + t:get("sent")
    short = math.max(short, t:get("ran_out"))
  end
  report(summary, latency, string.format(" sent=%d ran_out=%d", sent, short))
end
