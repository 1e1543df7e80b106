# shellcheck shell=bash disable=SC2034
# Shared by charts/{up,status,down}.sh (sourced after ../lib.sh, never executed).
CHARTS_PORT=8190
CHARTS_DIR="$TB_HOME/charts"
CHARTS_OUT="$CHARTS_DIR/build"                       # build.ts output: src/ (local path) and repo/
CHARTS_REPO_URL="http://127.0.0.1:$CHARTS_PORT/charts" # classic Helm repository (index.yaml)
CHARTS_OCI="oci://127.0.0.1:${REG_PORT:-5050}/kupenstack-test/charts" # the same packages in the anonymous registry
CHARTS_SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../charts" && pwd)"
