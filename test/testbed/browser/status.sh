#!/usr/bin/env bash
# Exit 0 when Debian's Chromium is installed.
set -euo pipefail
if command -v chromium >/dev/null; then echo "chromium: $(command -v chromium)"; else echo "chromium: missing (apt-get install -y chromium)"; exit 1; fi
