# shellcheck shell=bash disable=SC2034
# Shared by registry/{up,status,down}.sh (sourced after ../lib.sh, never executed).
REG_PORT=5050            # anonymous instance "registry"
REG_AUTH_PORT=5051       # Basic-auth instance "registry-auth"
REG_USER=kupenstack
REG_PASSWORD=testbed-secret


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
  return $ok
}
