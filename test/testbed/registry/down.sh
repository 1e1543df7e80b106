#!/usr/bin/env bash
# Stop the registries started by up.sh: only the process groups whose pids
# up.sh recorded under $TB_HOME/registry/run. Data is kept (pass --wipe to
# delete the two storage directories as well).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/../lib.sh"
tb_dirs registry
tb_stop registry registry-auth registry-token token-server
if [ "${1:-}" = "--wipe" ]; then
  rm -rf "$TB_HOME/registry/data-plain" "$TB_HOME/registry/data-auth" "$TB_HOME/registry/data-token"
  tb_log "wiped registry storage"
fi
