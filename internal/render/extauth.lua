-- haproxy-k8s-sync: external authentication (an Ingress's auth-url), and
-- the client certificate subject's match (auth-tls-match-cn: hks_cn),
-- answers rewritten (hks_rw) and a global-rate-limit's key (hks_gk), at
-- the end.
-- Written by the controller beside haproxy.cfg and loaded by lua-load; the
-- frontend's fixed rules run the action hks_auth only for a request whose
-- route has external authentication, with txn.ax holding the route's
-- settings (map data, checked by the controller), five lines:
--   METHOD, the auth URL, the response headers to pass on (comma
--   separated, may be empty; NAME:SOURCE sets NAME from the answer's
--   header SOURCE), the sign-in URL (may be empty), the HAProxy
--   backend of the cluster Service the URL names (may be empty: the URL's
--   host as HAProxy resolves it). With a backend, the request goes to the
--   internal frontend _extauth on the unix socket extauth.sock beside
--   this file, which sends it to that backend. Then, when any is set,
--   four more (HAProxy Ingress's keys, model.ExtAuth): the patterns of
--   the request headers sent (empty: all, "-": none), of the 2xx
--   answer's headers set on the request, of a failure's headers passed
--   to the client (empty: ingress-nginx's answers below; "-": 403), and
--   "1" when the sign-in URL takes every failure as written. METHOD "*"
--   is the client's own.

-- The auth server is asked with the request's headers (not its body).
-- 2xx: the request goes on, with the named response headers replacing
-- any the client sent; 401 and 403 are answered (401 with a sign-in URL:
-- a redirect there with rd= the original URL unless it has an rd=);
-- anything else, a timeout or a refused connection: 500. The auth and
-- sign-in URLs may hold nginx variables, expanded from the request
-- (expand); an auth URL whose host is then no host name or address: 500.

local skip = {
  ["host"] = true, ["content-length"] = true, ["transfer-encoding"] = true,
  ["connection"] = true, ["keep-alive"] = true, ["proxy-connection"] = true,
  ["te"] = true, ["upgrade"] = true, ["expect"] = true, ["trailer"] = true,
  ["x-hks-auth-backend"] = true,
}

-- the internal frontend's socket, beside this file
local here = (debug.getinfo(1, "S").source or ""):match("^@(.*)/[^/]*$")
local socket = here and ("unix@" .. here .. "/extauth.sock")

local methods = { GET = "get", HEAD = "head", POST = "post", PUT = "put", DELETE = "delete" }

local function lines(s)
  local out = {}
  for l in (s .. "\n"):gmatch("([^\n]*)\n") do out[#out + 1] = l end
  return out
end

local function escape(s)
  return (s:gsub("[^%w%-%._~]", function(c) return string.format("%%%02X", c:byte()) end))
end

-- nginx variables in the auth and sign-in URLs (model/extauthvars.go:
-- $name or ${name}, checked by the controller), expanded from the
-- request in one pass (a value holding '$' is not expanded again); a
-- value's characters that cannot stand in a URL are escaped, but
-- $escaped_request_uri's, escaped whole.
local function urlsafe(s)
  return (s:gsub("[%c%s\"'<>\\^`{|}#$\127-\255]", function(c) return string.format("%%%02X", c:byte()) end))
end

local function hostname(h)
  h = (h or ""):lower()
  if h:sub(1, 1) == "[" then return h:match("^(%b[])") or h end
  return (h:gsub(":%d*$", ""))
end

local function path(txn) return txn.f:path() or "/" end
local function query(txn) return txn.f:query() or "" end
local function httphost(txn) return txn.f:req_hdr("host") or "" end

local vars = {
  scheme = function(txn) if txn.f:ssl_fc() == 1 then return "https" end return "http" end,
  host = function(txn) return hostname(txn.f:req_hdr("host")) end,
  http_host = httphost,
  best_http_host = httphost,
  server_port = function(txn) return tostring(txn.f:dst_port() or "") end,
  request_uri = function(txn) return txn.f:url() or "/" end,
  escaped_request_uri = function(txn) return escape(txn.f:url() or "/") end,
  uri = path,
  document_uri = path,
  args = query,
  query_string = query,
  is_args = function(txn) if query(txn) ~= "" then return "?" end return "" end,
  request_method = function(txn) return txn.f:method() or "" end,
  remote_addr = function(txn) return tostring(txn.f:src() or "") end,
}

local families = {
  http_ = function(txn, n) return txn.f:req_hdr((n:gsub("_", "-"))) end,
  arg_ = function(txn, n) return txn.f:url_param(n) end,
  cookie_ = function(txn, n) return txn.f:req_cook(n) end,
}

local function value(txn, name)
  local f = vars[name]
  if f ~= nil then
    local v = tostring(f(txn) or "")
    if name == "escaped_request_uri" then return v end
    return urlsafe(v)
  end
  for prefix, g in pairs(families) do
    if #name > #prefix and name:sub(1, #prefix) == prefix then
      return urlsafe(tostring(g(txn, name:sub(#prefix + 1)) or ""))
    end
  end
  return ""
end

local function expand(txn, s)
  if not s:find("$", 1, true) then return s end
  local out, i = {}, 1
  while true do
    local at = s:find("$", i, true)
    if at == nil then
      out[#out + 1] = s:sub(i)
      break
    end
    out[#out + 1] = s:sub(i, at - 1)
    local name, after = s:match("^{([%w_]+)}()", at + 1)
    if name == nil then name, after = s:match("^([%w_]+)()", at + 1) end
    if name == nil then
      out[#out + 1] = "$"
      i = at + 1
    else
      out[#out + 1] = value(txn, name)
      i = after
    end
  end
  return table.concat(out)
end

-- validAuthority: a host name, an IPv4 or a bracketed IPv6 address, and
-- an optional port (a variable's value may be anything).
local function validAuthority(a)
  return a:match("^[%w%.%-]+$") or a:match("^[%w%.%-]+:%d+$") or a:match("^%[[%x:%.]+%]$") or a:match("^%[[%x:%.]+%]:%d+$")
end

local function answer(txn, status, headers, body)
  local reply = txn:reply({ status = status, headers = headers or {}, body = body })
  txn:done(reply)
end

-- header name patterns (model.ValidHeaderPattern: '*' any run, '?' one
-- character), comma separated, as Lua patterns; nil for "" (the default)
local function patterns(s)
  if s == "" then return nil end
  local out = {}
  for p in s:gmatch("[^,]+") do
    if p ~= "-" then
      local lp = p:gsub("[%^%$%(%)%%%.%[%]%+%-]", "%%%0"):gsub("%*", ".*"):gsub("%?", ".")
      out[#out + 1] = "^" .. lp .. "$"
    end
  end
  return out
end

local function matches(ps, name)
  for _, p in ipairs(ps) do
    if name:match(p) then return true end
  end
  return false
end

-- the message's framing and hop-by-hop headers: never copied from an
-- answer
local framing = {
  ["content-length"] = true, ["transfer-encoding"] = true, ["connection"] = true,
  ["keep-alive"] = true, ["proxy-connection"] = true, ["te"] = true,
  ["upgrade"] = true, ["trailer"] = true, ["host"] = true,
}

local function values(got)
  local vs = {}
  for i = 0, #got do
    if got[i] ~= nil then vs[#vs + 1] = got[i] end
  end
  return vs
end

core.register_action("hks_auth", { "http-req" }, function(txn)
  local l = lines(txn:get_var("txn.ax") or "")
  local method, url, pass, signin = methods[l[1] or ""], expand(txn, l[2] or ""), l[3] or "", l[4] or ""
  local backend = l[5] or ""
  local send, passing, fail, anyfail = patterns(l[6] or ""), patterns(l[7] or ""), l[8] or "", l[9] == "1"
  if l[1] == "*" then method = methods[txn.f:method() or ""] end
  local authority = url:match("^https?://([^/?]+)")
  if method == nil or authority == nil or not validAuthority(authority) then
    return answer(txn, 500)
  end
  local scheme = "http"
  if txn.f:ssl_fc() == 1 then scheme = "https" end
  local host = txn.f:req_hdr("host") or ""
  local uri = txn.f:url() or "/"
  local original = scheme .. "://" .. host .. uri

  local headers = {}
  for name, got in pairs(txn.http:req_get_headers()) do
    if not skip[name] and (send == nil or matches(send, name)) then
      headers[name] = values(got)
    end
  end
  headers["host"] = { authority }
  headers["x-original-url"] = { original }
  headers["x-original-method"] = { txn.f:method() }
  headers["x-auth-request-redirect"] = { uri }
  headers["x-real-ip"] = { tostring(txn.f:src()) }
  headers["x-sent-from"] = { "haproxy-k8s-sync" }

  local req = { url = url, headers = headers, timeout = 5000 }
  if backend ~= "" then
    if socket == nil then return answer(txn, 500) end
    req.dst = socket
    headers["x-hks-auth-backend"] = { backend }
  end
  local hc = core.httpclient()
  local ok, res = pcall(hc[method], hc, req)
  local status = 0
  if ok and res ~= nil and res.status ~= nil then status = res.status end

  if status >= 200 and status < 300 then
    for item in pass:gmatch("[^,]+") do
      -- NAME, or NAME:SOURCE: NAME set from the answer's header SOURCE
      local name, from = item:match("^([^:]+):(.+)$")
      if name == nil then name, from = item, item end
      txn.http:req_del_header(name)
      local got = res.headers and res.headers[from:lower()]
      if got ~= nil then
        for i = 0, #got do
          if got[i] ~= nil then txn.http:req_add_header(name, got[i]) end
        end
      end
    end
    if passing ~= nil and res.headers ~= nil then
      for name, got in pairs(res.headers) do
        name = name:lower()
        if not framing[name] and name ~= "x-hks-auth-backend" and matches(passing, name) then
          txn.http:req_del_header(name)
          for _, v in ipairs(values(got)) do txn.http:req_add_header(name, v) end
        end
      end
    end
    return
  end
  if anyfail and signin ~= "" then
    return answer(txn, 302, { ["location"] = expand(txn, signin) })
  end
  if fail ~= "" then
    if status == 0 then return answer(txn, 500) end
    if fail == "-" then return answer(txn, 403) end
    local h, ps = {}, patterns(fail)
    for name, got in pairs(res.headers or {}) do
      name = name:lower()
      if not framing[name] and matches(ps, name) then h[name] = values(got) end
    end
    return answer(txn, status, h, res.body)
  end
  if status == 401 and signin ~= "" then
    local to = expand(txn, signin)
    if not (signin:find("?rd=", 1, true) or signin:find("&rd=", 1, true)) then
      local sep = "?"
      if to:find("?", 1, true) then sep = "&" end
      to = to .. sep .. "rd=" .. escape(original)
    end
    return answer(txn, 302, { ["location"] = to })
  end
  if status == 401 or status == 403 then
    local h = {}
    local www = res.headers and res.headers["www-authenticate"]
    if status == 401 and www ~= nil and www[0] ~= nil then h["www-authenticate"] = www[0] end
    return answer(txn, status, h)
  end
  answer(txn, 500)
end, 0)

-- hks_cn: auth-tls-match-cn. txn.an holds the action's regular expression
-- (map data, checked by the controller: model.MatchCNProblem), txn.dn the
-- verified client certificate's subject in RFC 2253 form (absent without
-- a certificate). A subject the expression is not found in, no subject,
-- or an expression HAProxy's regex engine does not compile: 403. The
-- compiled expressions are kept, at most 256 (then forgotten together).
local compiled, ncompiled = {}, 0

core.register_action("hks_cn", { "http-req" }, function(txn)
  local src = txn:get_var("txn.an") or ""
  local re = compiled[src]
  if re == nil then
    local ok, r = Regex.new(src, true)
    if not ok then return answer(txn, 403) end
    if ncompiled >= 256 then compiled, ncompiled = {}, 0 end
    compiled[src], ncompiled, re = r, ncompiled + 1, r
  end
  local dn = txn:get_var("txn.dn")
  if dn == nil or not re:exec(dn) then return answer(txn, 403) end
end, 0)

-- hks_rw: an answer's headers rewritten (proxy-redirect-from/-to,
-- proxy-cookie-domain/-path: model.ProxyRewrite). txn.ao holds six lines
-- (map data, checked by the controller): the redirect's from and to, the
-- cookie domain's from and to, the cookie path's from and to; an empty
-- pair rewrites nothing. Location (and Refresh's url=) beginning with
-- from: that beginning replaced; a Set-Cookie's Domain equal to from
-- (case-insensitive, a leading '.' ignored): replaced; its Path beginning
-- with from: that beginning replaced.
local function undot(s)
  return (s:gsub("^%.", "")):lower()
end

local function cookie(c, dfrom, dto, pfrom, pto)
  local parts, first = {}, true
  for seg in (c .. ";"):gmatch("([^;]*);") do
    if not first then
      local lead, name, eq, val = seg:match("^(%s*)([^=%s]+)(%s*=%s*)(.-)%s*$")
      local n = name and name:lower()
      if n == "domain" and dfrom ~= "" and undot(val) == undot(dfrom) then
        seg = lead .. name .. eq .. dto
      elseif n == "path" and pfrom ~= "" and val:sub(1, #pfrom) == pfrom then
        seg = lead .. name .. eq .. pto .. val:sub(#pfrom + 1)
      end
    end
    first = false
    parts[#parts + 1] = seg
  end
  return table.concat(parts, ";")
end

local function rewrite(txn, name, fn)
  local got = txn.http:res_get_headers()[name]
  if got == nil then return end
  local vs, changed = values(got), false
  for i, v in ipairs(vs) do
    local nv = fn(v)
    if nv ~= v then vs[i], changed = nv, true end
  end
  if not changed then return end
  txn.http:res_del_header(name)
  for _, v in ipairs(vs) do txn.http:res_add_header(name, v) end
end

core.register_action("hks_rw", { "http-res" }, function(txn)
  local l = lines(txn:get_var("txn.ao") or "")
  local rfrom, rto, dfrom, dto, pfrom, pto = l[1] or "", l[2] or "", l[3] or "", l[4] or "", l[5] or "", l[6] or ""
  if rfrom ~= "" then
    rewrite(txn, "location", function(v)
      if v:sub(1, #rfrom) == rfrom then return rto .. v:sub(#rfrom + 1) end
      return v
    end)
    rewrite(txn, "refresh", function(v)
      local _, j = v:lower():find("url=", 1, true)
      if j ~= nil and v:sub(j + 1, j + #rfrom) == rfrom then return v:sub(1, j) .. rto .. v:sub(j + 1 + #rfrom) end
      return v
    end)
  end
  if dfrom ~= "" or pfrom ~= "" then
    rewrite(txn, "set-cookie", function(v) return cookie(v, dfrom, dto, pfrom, pto) end)
  end
end, 0)

-- hks_gk: a global-rate-limit's key (model.GlobalLimit.Key): txn.gk holds
-- its template (map data, checked by the controller: nginx variables and
-- literal text), txn.gq (the client's address) is set to it expanded
-- from the request unless that is empty (ingress-nginx's fallback).
core.register_action("hks_gk", { "http-req" }, function(txn)
  local k = expand(txn, txn:get_var("txn.gk") or "")
  if k ~= "" then txn:set_var("txn.gq", k) end
end, 0)
