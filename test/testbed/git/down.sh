#!/usr/bin/env bash
# Stop the nginx and fcgiwrap started by up.sh: only the process groups whose
# pids up.sh recorded under $TB_HOME/git/run. Repositories are kept (pass
# --wipe to delete $TB_HOME/git/repos as well).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/../lib.sh"
. "$HERE/common.sh"
tb_dirs git
tb_stop nginx fcgiwrap
tb_pid fcgiwrap >/dev/null 2>&1 || rm -f "$RUN_DIR/fcgiwrap.sock"
if [ "${1:-}" = "--wipe" ]; then
  rm -rf "$GIT_REPOS"
  tb_log "wiped $GIT_REPOS"
fi
