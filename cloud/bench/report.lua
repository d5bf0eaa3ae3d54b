-- Shared by the wrk scripts: prints the one RESULT line bench.sh reads.
-- non2xx counts responses outside 200-399 (wrk's status errors); requests
-- is how many completed (bench.sh divides the server's CPU time by it);
-- extra, if given, is appended as it is.
function report(summary, latency, extra)
  io.write(string.format("RESULT rps=%.0f p50_ms=%.2f p99_ms=%.2f errors=%d non2xx=%d requests=%d%s\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, summary.errors.status,
    summary.requests, extra or ""))
end
