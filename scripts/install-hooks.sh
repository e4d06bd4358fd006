#!/usr/bin/env bash
# Installs the pre-commit hook (`make hooks`). The installed hook is a stub
# that runs scripts/pre-commit of the checkout being committed to, so it
# follows the script as it changes and serves every worktree of a clone
# (worktrees share one hooks directory, which git rev-parse names).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)" # --git-path answers relative to here
hooks=$(git rev-parse --git-path hooks)
mkdir -p "$hooks"
target=$hooks/pre-commit
marker="installed by ava's scripts/install-hooks.sh"
if [[ -e $target ]] && ! grep -qF "$marker" "$target"; then
  echo "install-hooks: $target is not ava's; kept as $target.orig" >&2
  mv "$target" "$target.orig"
fi
cat >"$target" <<HOOK
#!/bin/sh
# $marker
hook="\$(git rev-parse --show-toplevel)/scripts/pre-commit"
[ -x "\$hook" ] || exit 0
exec "\$hook" "\$@"
HOOK
chmod +x "$target"
echo "install-hooks: $target runs scripts/pre-commit"
