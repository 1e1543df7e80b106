#!/usr/bin/env bash
# Exit 0 when nginx and fcgiwrap (our recorded process groups) run and the
# server answers: 401 without credentials, 200 on info/refs of the smoke repo
# (or on any repo) with credentials.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/../lib.sh"
. "$HERE/common.sh"
tb_dirs git
rc=0
tb_running fcgiwrap nginx || rc=1
ss -Hxl 2>/dev/null | awk '{print $5}' | grep -qxF "$RUN_DIR/fcgiwrap.sock" \
  || { echo "nobody listens on $RUN_DIR/fcgiwrap.sock"; rc=1; }
u="$GIT_BASE_URL/smoke.git/info/refs?service=git-upload-pack"
c=$(tb_http_code "$u"); [ "$c" = 401 ] || { echo "anonymous GET $u -> $c (want 401)"; rc=1; }
if [ -d "$GIT_REPOS/smoke.git" ]; then
  c=$(tb_http_code "$u" -u "$GIT_USER:$GIT_PASSWORD")
  [ "$c" = 200 ] || { echo "authenticated GET $u -> $c (want 200)"; rc=1; }
fi
[ $rc = 0 ] && echo "http checks: ok"
exit $rc
