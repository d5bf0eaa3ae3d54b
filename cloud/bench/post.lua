dofile("cloud/bench/report.lua") -- bench.sh runs wrk from the repository root
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
  report(summary, latency)
end
