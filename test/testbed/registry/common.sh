# shellcheck shell=bash disable=SC2034
# Shared by registry/{up,status,down}.sh (sourced after ../lib.sh, never executed).
REG_PORT=5050            # anonymous instance "registry"
REG_AUTH_PORT=5051       # Basic-auth instance "registry-auth"
REG_TOKEN_PORT=5052      # Bearer-token instance "registry-token"
TOKEN_PORT=5053          # its token server "token-server" (token-server.ts)
REG_USER=kupenstack
REG_PASSWORD=testbed-secret
# OAuth2 refresh token the token server accepts (docker config "identitytoken")
REG_REFRESH_TOKEN=kupenstack-testbed-identity-token
TOKEN_SERVICE=kupenstack-testbed
TOKEN_ISSUER=kupenstack-testbed-tokens

# tb_node: a node that runs .ts files (>= 22.18: type stripping on by default).
# KUPENSTACK_NODE (the integration global setup passes its own) comes first.
tb_node() {
  local c v
  for c in "${KUPENSTACK_NODE:-}" $(which -a node 2>/dev/null) /opt/node24/bin/node; do
    [ -n "$c" ] && [ -x "$c" ] || continue
    v=$("$c" -p 'process.versions.node' 2>/dev/null) || continue
    if "$c" -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>22||(a===22&&b>=18)?0:1)' 2>/dev/null; then
      echo "$c"; return 0
    fi
  done
  return 1
}


# reg_check: the three probes required of the test bed; prints failures, exit 1 on any
reg_check() {
  local c ok=0
  c=$(tb_http_code "http://127.0.0.1:$REG_PORT/v2/")
  [ "$c" = 200 ] || { echo "registry: GET http://127.0.0.1:$REG_PORT/v2/ -> $c (want 200)" >&2; ok=1; }
  c=$(tb_http_code "http://127.0.0.1:$REG_AUTH_PORT/v2/")
  [ "$c" = 401 ] || { echo "registry-auth: GET /v2/ without credentials -> $c (want 401)" >&2; ok=1; }
  c=$(tb_http_code "http://127.0.0.1:$REG_AUTH_PORT/v2/" -u "$REG_USER:$REG_PASSWORD")
  [ "$c" = 200 ] || { echo "registry-auth: GET /v2/ with credentials -> $c (want 200)" >&2; ok=1; }
  c=$(tb_http_code "http://127.0.0.1:$REG_AUTH_PORT/v2/" -u "$REG_USER:wrong-password")
  [ "$c" = 401 ] || { echo "registry-auth: GET /v2/ with a wrong password -> $c (want 401)" >&2; ok=1; }
  c=$(tb_http_code "http://127.0.0.1:$REG_TOKEN_PORT/v2/")
  [ "$c" = 401 ] || { echo "registry-token: GET /v2/ without a token -> $c (want 401)" >&2; ok=1; }
  local token
  token=$(curl -s -m 5 -u "$REG_USER:$REG_PASSWORD" "http://127.0.0.1:$TOKEN_PORT/token?service=$TOKEN_SERVICE&scope=registry:catalog:*" \
          | sed -n 's/.*"token":"\([^"]*\)".*/\1/p')
  [ -n "$token" ] || { echo "token-server: no token for the test user" >&2; ok=1; }
  c=$(tb_http_code "http://127.0.0.1:$REG_TOKEN_PORT/v2/" -H "Authorization: Bearer $token")
  [ "$c" = 200 ] || { echo "registry-token: GET /v2/ with a token -> $c (want 200; the registry does not trust the token server's key?)" >&2; ok=1; }
  c=$(tb_http_code "http://127.0.0.1:$TOKEN_PORT/token?service=$TOKEN_SERVICE" -u "$REG_USER:wrong-password")
  [ "$c" = 401 ] || { echo "token-server: wrong password -> $c (want 401)" >&2; ok=1; }
  return $ok
}
