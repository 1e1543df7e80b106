#!/usr/bin/env bash
# new-repo.sh NAME - create (idempotently) the bare repository NAME.git under
# $TB_HOME/git/repos with default branch main and push over HTTP enabled.
# NAME may contain '/' (e.g. org/app) and may end in .git. Prints the clone URL.
# An existing repository keeps its content and HEAD; only its config is ensured.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/../lib.sh"
. "$HERE/common.sh"
[ $# -eq 1 ] || { echo "usage: $0 NAME" >&2; exit 2; }
name=${1%.git}
if ! [[ $name =~ ^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*$ ]] || [[ $name == *..* ]]; then
  echo "new-repo.sh: invalid repository name '$1' (letters, digits, . _ - and /; no '..')" >&2; exit 2
fi
repo="$GIT_REPOS/$name.git"
if [ ! -f "$repo/HEAD" ]; then
  mkdir -p "$(dirname "$repo")"
  git init -q --bare --initial-branch=main "$repo"
  tb_log "created $repo"
fi
git -C "$repo" config http.receivepack true      # push allowed (auth is nginx's job)
git -C "$repo" config http.uploadpack true
echo "$GIT_BASE_URL/$name.git"
