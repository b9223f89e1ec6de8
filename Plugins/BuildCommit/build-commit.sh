#!/bin/sh
# build-commit.sh PACKAGE_DIR OUTPUT_FILE: writes the Swift line that gives `BuildInfo.commit`, the
# short hash of PACKAGE_DIR's HEAD; `unknown` when PACKAGE_DIR is no git clone (a source tarball) or
# git is missing, so that a build never fails for it. BEARER_PROXY_COMMIT, when set, names the commit
# instead. The file is only rewritten when its line changes: a build at the same commit recompiles
# nothing.
commit="${BEARER_PROXY_COMMIT:-$(git -C "$1" rev-parse --short=7 HEAD 2>/dev/null || true)}"
[ -n "$commit" ] || commit=unknown
text="extension BuildInfo { package static let commit = \"$commit\" }"
mkdir -p "$(dirname "$2")"
[ "$(cat "$2" 2>/dev/null)" = "$text" ] || printf '%s\n' "$text" >"$2"
