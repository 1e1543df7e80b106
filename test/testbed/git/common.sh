# shellcheck shell=bash disable=SC2034
# Shared by git/{up,status,down,new-repo}.sh (sourced after ../lib.sh, never executed).
GIT_PORT=8180
GIT_USER=kupenstack
GIT_PASSWORD=testbed-secret
GIT_PEER_DIR="$TB_HOME/git"
GIT_REPOS="$GIT_PEER_DIR/repos"            # GIT_PROJECT_ROOT
GIT_HTPASSWD="$GIT_PEER_DIR/htpasswd"
GIT_BASE_URL="http://127.0.0.1:$GIT_PORT/git"

