# Shared helpers for the test-bed scripts (sourced, never executed).
# Every peer keeps its state under $TB_HOME/<peer>/: run/<svc>.pid, log/<svc>.log.
# Each service runs in its own process group (setsid) whose id is the recorded
# PID, so stopping kills exactly what we started and nothing else.
TB_HOME="${KUPENSTACK_TESTBED_HOME:-/var/lib/kupenstack-testbed}"
# A test run gives its processes a TMPDIR it deletes when it ends (test/support/secret-scan-setup.ts);
# the peers outlive the run, so every script that may start one (up.sh, or a test calling a peer's
# up.sh directly) gives them the TMPDIR the run started with. runc, under containerd, writes there.
if [ -n "${KS_SECRET_RUN_TMP:-}" ]; then
  if [ -n "${KS_SECRET_ORIGINAL_TMPDIR:-}" ]; then export TMPDIR="$KS_SECRET_ORIGINAL_TMPDIR"; else unset TMPDIR; fi
fi
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH
APT="apt-get -o DPkg::Lock::Timeout=600 -y -q --no-install-recommends"

tb_log() { echo "[testbed $(date +%H:%M:%S)] $*" >&2; }

# One test-bed script at a time on this machine: several test runs (worktrees,
# parallel CI jobs) may start the peers at once, and two starts of the same
# service would race for its pid file and port. Child scripts inherit the lock.
tb_lock() {
  [ -n "${TB_LOCKED:-}" ] && return 0
  mkdir -p "$TB_HOME"
  exec 9>"$TB_HOME/.lock"
  if ! flock -w 1800 9; then
    echo "testbed: another test-bed script has held $TB_HOME/.lock for 30 min; see its output, or the process holding it: fuser $TB_HOME/.lock" >&2
    exit 1
  fi
  export TB_LOCKED=1
}
tb_lock

# tb_dirs PEER: sets RUN_DIR and LOG_DIR for that peer and creates them
# /run/netns as iproute2 makes it (a shared bind mount of itself), made once, before anything that
# adds network namespaces starts: two `ip netns add` at once (Neutron's agents starting together) each
# bind it while it is not yet a mount point, and every namespace mounted after that lands in both
# layers, one hidden under the other, where no unmount by path reaches it (containerd's
# StopPodSandbox then fails "unlinkat …: device or resource busy" until the host restarts).
tb_netns_run_dir() {
  mkdir -p /run/netns
  mountpoint -q /run/netns || mount --bind /run/netns /run/netns
  mount --make-shared /run/netns
}

tb_dirs() {
  RUN_DIR="$TB_HOME/$1/run"; LOG_DIR="$TB_HOME/$1/log"
  mkdir -p "$RUN_DIR" "$LOG_DIR"
}

# tb_identity PID: "<boot id> <start time>" of a live process (start time in clock
# ticks since boot, /proc/PID/stat field 22), empty when it is gone. A PID alone
# names nothing for long: pid_max is 32768 on this machine kind and PIDs wrap
# within one boot, so a pid file left from an earlier run may name a process we
# never started, even another of our own services (a setsid leader like ours).
tb_identity() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  # Fields after "(comm) " start at field 3, so field 22 is the 20th of them.
  # shellcheck disable=SC2086
  set -- ${stat##*) }
  [ $# -ge 20 ] && echo "$(cat /proc/sys/kernel/random/boot_id) ${20}"
}

# tb_pid SVC: prints the pid of a service we started if it still runs: the
# recorded process is alive, leads its own group, and is the very process
# tb_start recorded (same boot, same start time); a reused PID is not ours.
tb_pid() {
  local f="$RUN_DIR/$1.pid" pid
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
  [ "$(ps -o pgid= -p "$pid" | tr -d ' ')" = "$pid" ] || return 1
  # A killed leader stays a zombie until PID 1 reaps it (1-2 s here): that is dead.
  case "$(ps -o stat= -p "$pid" 2>/dev/null)" in Z*|'') return 1 ;; esac
  [ "$(tb_identity "$pid")" = "$(cat "$RUN_DIR/$1.started" 2>/dev/null)" ] || return 1
  echo "$pid"
}

# Prints each service's state ("running (process group N)" or "NOT running"); 1 when one is not running.
tb_running() {
  local svc pid rc=0
  for svc in "$@"; do
    if pid=$(tb_pid "$svc"); then echo "$svc: running (process group $pid)"
    else echo "$svc: NOT running"; rc=1; fi
  done
  return $rc
}

# tb_start SVC CMD...: start CMD detached in a new process group, log to LOG_DIR;
# records its pid and its identity (tb_identity) beside it
tb_start() {
  local svc=$1 pid; shift
  if tb_pid "$svc" >/dev/null; then return 0; fi
  # 9>&-: the daemon must not inherit tb_lock's descriptor, or it holds the
  # test-bed lock for as long as it runs and every later script waits 30 min.
  setsid "$@" >>"$LOG_DIR/$svc.log" 2>&1 < /dev/null 9>&- &
  pid=$!
  # The start time is set at fork and kept across exec: read now, it names this process.
  # A leader that exits at once (a daemon forking its workers) may be reaped before it is read:
  # then the boot alone is recorded, and its group is ours in this boot (tb_ours_group).
  local identity
  identity=$(tb_identity "$pid")
  echo "${identity:-$(cat /proc/sys/kernel/random/boot_id) exited}" > "$RUN_DIR/$svc.started"
  echo "$pid" > "$RUN_DIR/$svc.pid"
}

tb_group_alive() { [ -n "$(ps -o pid= -g "$1" 2>/dev/null)" ]; }

# tb_ours_group SVC PID: true when process group PID is one tb_start made for
# SVC: its leader is the recorded process, or the leader has exited and the
# group lives on in the same boot. The kernel gives no new process a PID still
# used as a group id, so that group is our leader's, unless it emptied and a
# foreign leader took the id and exited too, leaving members: too rare to guard.
tb_ours_group() {
  local started now
  started=$(cat "$RUN_DIR/$1.started" 2>/dev/null) || return 1
  [ -n "$started" ] || return 1
  now=$(tb_identity "$2")
  if [ -n "$now" ]; then [ "$now" = "$started" ]; return; fi
  [ "${started%% *}" = "$(cat /proc/sys/kernel/random/boot_id)" ]
}

# tb_stop SVC...: SIGTERM each recorded group, wait up to 30 s, then SIGKILL it.
# A pid file whose PID now names another process is stale: removed, nothing killed.
tb_stop() {
  local s f pid pairs="" i alive sp
  for s in "$@"; do
    f="$RUN_DIR/$s.pid"
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    if [ -z "$pid" ] || ! tb_group_alive "$pid"; then rm -f "$f" "$RUN_DIR/$s.started"; continue; fi
    if ! tb_ours_group "$s" "$pid"; then
      tb_log "$s: $f names pid $pid, which this test bed did not start (a stale pid file, the PID reused): left alone"
      rm -f "$f" "$RUN_DIR/$s.started"; continue
    fi
    tb_log "stopping $s (process group $pid)"
    kill -TERM -- "-$pid" 2>/dev/null
    pairs="$pairs $s:$pid"
  done
  for i in $(seq 1 60); do
    alive=0
    for sp in $pairs; do tb_group_alive "${sp#*:}" && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.5
  done
  for sp in $pairs; do
    if tb_group_alive "${sp#*:}"; then
      tb_log "${sp%%:*} still alive after 30 s: SIGKILL group ${sp#*:}"
      kill -KILL -- "-${sp#*:}" 2>/dev/null
    fi
    rm -f "$RUN_DIR/${sp%%:*}.pid" "$RUN_DIR/${sp%%:*}.started"
  done
}

# tb_fail SVC MESSAGE: print the message and the tail of the service log, exit 1
tb_fail() {
  echo "testbed: $1: $2" >&2
  if [ -f "$LOG_DIR/$1.log" ]; then
    echo "---- last 40 lines of $LOG_DIR/$1.log ----" >&2
    tail -n 40 "$LOG_DIR/$1.log" >&2
    echo "----" >&2
  fi
  exit 1
}

tb_port_listening() {
  ss -Hltn "sport = :$1" 2>/dev/null | awk '{print $4}' | grep -qE "^(127\.0\.0\.1|0\.0\.0\.0|\*|\[::\]|\[::1\]):$1$"
}

# tb_wait_http URL [TIMEOUT_S]: until the URL answers any HTTP status
tb_wait_http() {
  local url=$1 t=${2:-120} i=0 code
  while [ $i -lt $((t * 2)) ]; do
    code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$url" || true)
    [ -n "$code" ] && [ "$code" != "000" ] && return 0
    sleep 0.5; i=$((i + 1))
  done
  return 1
}

tb_wait_port() {
  local p=$1 t=${2:-60} i=0
  while [ $i -lt $((t * 2)) ]; do
    tb_port_listening "$p" && return 0
    sleep 0.5; i=$((i + 1))
  done
  return 1
}

# tb_apt PKG...: install Debian packages that are missing (apt-get update once)
tb_apt() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  export DEBIAN_FRONTEND=noninteractive
  if [ ! -e /usr/sbin/policy-rc.d ]; then   # maintainer scripts must never start services
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d
  fi
  if [ ! -f "$TB_HOME/.apt-updated" ] || [ -n "$(find "$TB_HOME/.apt-updated" -mmin +720 2>/dev/null)" ]; then
    apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
    mkdir -p "$TB_HOME"; touch "$TB_HOME/.apt-updated"
  fi
  tb_log "installing ${missing[*]}"
  $APT install "${missing[@]}" >/dev/null
}

# tb_guard_install PKG:PIDFILE:BINARY... - tb_apt the missing packages. Debian
# maintainer scripts may try to start the package's own daemon (nginx,
# fcgiwrap); tb_apt's policy-rc.d forbids it, but if a daemon shows up anyway we
# stop it only when we can prove the install started it: its init-script pid
# file names a live process running BINARY that did not exist before and is
# younger than the install. Anything else is left alone (and logged).
tb_guard_install() {
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

# tb_http_code URL [CURL_ARGS...]: HTTP status code (000 when unreachable)
tb_http_code() {
  local url=$1; shift
  curl -s -o /dev/null -m 5 -w '%{http_code}' "$@" "$url" || true
}
