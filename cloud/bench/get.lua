dofile("cloud/bench/report.lua") -- bench.sh runs wrk from the repository root
-- wrk script: GET a path with the bearer key in KEY, printing one RESULT line.
local key = os.getenv("KEY") or ""
local path = os.getenv("BENCH_PATH") or "/v1/teams"
request = function()
  if key == "" then
    return wrk.format("GET", path)
  end
  return wrk.format("GET", path, { ["Authorization"] = "Bearer " .. key })
end

done = function(summary, latency, requests)
  report(summary, latency)
end
