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
  io.write(string.format("RESULT rps=%.0f p50_ms=%.2f p99_ms=%.2f errors=%d non2xx=%d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, summary.errors.status))
end
