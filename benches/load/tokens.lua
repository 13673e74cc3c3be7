-- wrk script for benches/load/run.sh: one kind of request per run, named by the first argument.
--
--   wrk ... -s tokens.lua URL -- broker TOKENS ROLE THREADS
--       POST /v1/credentials, each request with a token never sent before (the broker refuses a
--       replayed jti); a thread that runs out resends its last token and counts it in ran_out.
--   wrk ... -s tokens.lua URL -- jwt TOKENS ROLE THREADS
--       POST /v1/auth/jwt/login; OpenBao has no replay check, so tokens are reused when they run
--       out (counted in reused).
--   wrk ... -s tokens.lua URL -- create BODY ROOT_TOKEN THREADS
--       POST /v1/auth/token/create with BODY (what the broker sends), `{n}` in it replaced by a
--       fresh job id per request.
--
-- TOKENS has one token a line. Each wrk thread has its own Lua state: setup() numbers the
-- threads, and thread k takes lines k, k+THREADS, k+2*THREADS … so no two threads share a token.
-- A response outside 2xx counts as an error (wrk itself counts only socket errors). done() prints
-- one line: RESULT key=value …

local threads = {}

function setup(thread)
   thread:set("id", #threads)
   table.insert(threads, thread)
end

function init(args)
   mode, source, extra = args[1], args[2], args[3]
   local count = tonumber(args[4])
   non2xx, ran_out, reused, statuses = 0, 0, 0, {}
   if mode == "create" then
      local file = assert(io.open(source))
      local body = file:read("*a"):gsub("%s+$", "")
      file:close()
      prefix, suffix = body:match("^(.-){n}(.*)$")
      assert(prefix, source .. " has no {n}")
      headers = { ["X-Vault-Token"] = extra, ["Content-Type"] = "application/json" }
      sent = 0
      return
   end
   assert(mode == "broker" or mode == "jwt", "unknown mode " .. tostring(mode))
   tokens = {}
   local line_index = 0
   for line in io.lines(source) do
      if line_index % count == id and line ~= "" then
         tokens[#tokens + 1] = line
      end
      line_index = line_index + 1
   end
   assert(#tokens > 0, "thread " .. id .. " got no token from " .. source)
   next_token = 1
   headers = { ["Content-Type"] = "application/json" }
end

local function next_jwt()
   local token = tokens[next_token]
   next_token = next_token + 1
   if token then
      return token
   end
   if mode == "broker" then
      ran_out = ran_out + 1
      return tokens[#tokens]
   end
   reused = reused + 1
   next_token = 2
   return tokens[1]
end

function request()
   if mode == "create" then
      sent = sent + 1
      local body = prefix .. "bench-" .. id .. "-" .. sent .. suffix
      return wrk.format("POST", "/v1/auth/token/create", headers, body)
   end
   local token = next_jwt()
   if mode == "broker" then
      headers["Authorization"] = "Bearer " .. token
      return wrk.format("POST", "/v1/credentials", headers, '{"roles":["' .. extra .. '"]}')
   end
   return wrk.format("POST", "/v1/auth/jwt/login", headers, '{"role":"' .. extra .. '","jwt":"' .. token .. '"}')
end

function response(status)
   if status < 200 or status > 299 then
      non2xx = non2xx + 1
      statuses[status] = (statuses[status] or 0) + 1
   end
end

function done(summary, latency, requests)
   local failed, out_of_tokens, reuses, by_status = 0, 0, 0, {}
   for _, thread in ipairs(threads) do
      failed = failed + thread:get("non2xx")
      out_of_tokens = out_of_tokens + thread:get("ran_out")
      reuses = reuses + thread:get("reused")
      for status, n in pairs(thread:get("statuses")) do
         by_status[status] = (by_status[status] or 0) + n
      end
   end
   local shown = {}
   for status, n in pairs(by_status) do
      shown[#shown + 1] = status .. ":" .. n
   end
   table.sort(shown)
   local e = summary.errors
   local socket_errors = e.connect + e.read + e.write + e.timeout
   local seconds = summary.duration / 1e6
   local ok = summary.requests - failed
   io.write(string.format(
      "RESULT mode=%s requests=%d ok=%d seconds=%.2f ok_rps=%.1f p50_ms=%.2f p99_ms=%.2f errors=%d non2xx=%d socket_errors=%d ran_out=%d reused=%d statuses=%s\n",
      threads[1]:get("mode"), summary.requests, ok, seconds, ok / seconds,
      latency:percentile(50) / 1000, latency:percentile(99) / 1000,
      failed + socket_errors, failed, socket_errors, out_of_tokens, reuses,
      #shown > 0 and table.concat(shown, ",") or "-"))
end
