-- wrk script: POST /v1/teams with a fresh Idempotency-Key on each request.
-- KEY (the bearer key) comes from the environment.
local key = os.getenv("KEY")
local counter = 0
math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))

local function uuid()
  local t = "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx"
  return (t:gsub("[xy]", function(c)
    local v = (c == "x") and math.random(0, 15) or math.random(8, 11)
    return string.format("%x", v)
  end))
end

request = function()
  counter = counter + 1
  local body = '{"name": "Bench team ' .. counter .. '", "visitors_can_choose": true}'
  return wrk.format("POST", "/v1/teams", {
    ["Authorization"] = "Bearer " .. key,
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = uuid(),
  }, body)
end

done = function(summary, latency, requests)
  io.write(string.format("RESULT rps=%.0f p50_ms=%.2f p99_ms=%.2f errors=%d non2xx=%d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, summary.errors.status))
end
