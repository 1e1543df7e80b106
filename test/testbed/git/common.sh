# shellcheck shell=bash disable=SC2034
# Shared by git/{up,status,down,new-repo}.sh (sourced after ../lib.sh, never executed).
GIT_PORT=8180
GIT_USER=kupenstack
GIT_PASSWORD=testbed-secret
GIT_PEER_DIR="$TB_HOME/git"
GIT_REPOS="$GIT_PEER_DIR/repos"            # GIT_PROJECT_ROOT
GIT_HTPASSWD="$GIT_PEER_DIR/htpasswd"
GIT_BASE_URL="http://127.0.0.1:$GIT_PORT/git"

# git_guard_install PKG:PIDFILE:BINARY... - tb_apt the missing packages. Debian
# maintainer scripts may try to start the package's own daemon (nginx,
# fcgiwrap); tb_apt's policy-rc.d forbids it, but if a daemon shows up anyway we
# stop it only when we can prove the install started it: its init-script pid
# file names a live process running BINARY that did not exist before and is
# younger than the install. Anything else is left alone (and logged).
git_guard_install() {
  local spec pkg pidf bin pid t_start pkgs=() missing=0
  declare -A before=()
  for spec in "$@"; do
    pkg=${spec%%:*}; pkgs+=("$pkg")
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing=1
  done
  [ $missing = 1 ] || return 0
  for spec in "$@"; do
    pidf=$(echo "$spec" | cut -d: -f2)
    [ -n "$pidf" ] || continue
    before[$pidf]=$(cat "$pidf" 2>/dev/null || true)
  done
  t_start=$SECONDS
  tb_apt "${pkgs[@]}"
  for spec in "$@"; do
    pidf=$(echo "$spec" | cut -d: -f2); bin=$(echo "$spec" | cut -d: -f3)
    [ -n "$pidf" ] && [ -f "$pidf" ] || continue
    pid=$(cat "$pidf" 2>/dev/null || true)
    [ -n "$pid" ] && [ -d "/proc/$pid" ] || continue
    if [ "$pid" != "${before[$pidf]:-}" ] \
       && [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$bin" ] \
       && [ "$(ps -o etimes= -p "$pid" | tr -d ' ')" -le $((SECONDS - t_start + 2)) ]; then
      tb_log "WARNING: installing ${spec%%:*} started its daemon (pid $pid, $pidf) despite policy-rc.d; stopping it"
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 20); do [ -d "/proc/$pid" ] || break; sleep 0.5; done
      [ -d "/proc/$pid" ] && kill -KILL "$pid" 2>/dev/null || true
      rm -f "$pidf"
    else
      tb_log "note: $pidf names pid $pid, not started by this install: left alone"
    fi
  done
}

# live_pid SVC: like tb_pid, but a zombie does not count as running (PID 1 on
# the test machine reaps orphans only after a second or two, and tb_pid alone
# takes a just-killed, not yet reaped process for a live one).
live_pid() {
  local pid st
  pid=$(tb_pid "$1") || return 1
  st=$(ps -o stat= -p "$pid" 2>/dev/null | tr -d ' ')
  [ -n "$st" ] && [ "${st#Z}" = "$st" ] || return 1
  echo "$pid"
}

# git_code URL [CURL_ARGS...]: HTTP status code (000 when unreachable)
git_code() {
  local url=$1; shift
  curl -s -o /dev/null -m 5 -w '%{http_code}' "$@" "$url" || true
}
