#!/usr/bin/env bash
# Headless Chromium from Debian's package, for the docs site's screenshots and search check
# (test/integration/docs/site.test.ts drives it with playwright-core through executablePath: no browser
# is downloaded at test time). Idempotent: nothing is reinstalled when present.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../lib.sh
. "$HERE/../lib.sh"
command -v chromium >/dev/null || tb_apt chromium
command -v chromium >/dev/null || tb_fail browser "chromium missing after apt-get install chromium"
tb_log "browser: $(chromium --version 2>/dev/null | head -1)"
