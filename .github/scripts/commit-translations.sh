#!/usr/bin/env bash
# Commit the translated pages and the manifest, and push them to BRANCH on origin.
#
# Usage: [GITHUB_TOKEN=...] .github/scripts/commit-translations.sh [--last] BRANCH
#
# Only docs/ja, docs/ko, docs/zh and the manifest are staged (additions, edits and deletions);
# any other change is reported and left out; nothing is pushed when those paths did not change.
# The commit is rebased onto BRANCH as it is now (`git pull --rebase`) and pushed; when the push
# is refused because BRANCH moved meanwhile, it pulls and pushes once more. When a rebase
# conflicts (translations were pushed meanwhile), it resets to the new tip of BRANCH and writes
# `retranslate=true` to $GITHUB_OUTPUT, so that the workflow translates again from there; with
# --last (that second time) a conflict fails instead.
#
# With GITHUB_TOKEN set (the workflow's push steps only: its checkout keeps no credentials), it
# pulls and pushes through an authenticated URL of $GITHUB_SERVER_URL/$GITHUB_REPOSITORY that
# lives only in this process; without it, through the `origin` remote as it is.
set -euo pipefail

last=false
if [ "${1:-}" = "--last" ]; then
  last=true
  shift
fi
branch="${1:?usage: commit-translations.sh [--last] BRANCH}"
translated=(docs/ja docs/ko docs/zh docs/i18n/manifest.json)

remote=origin
if [ -n "${GITHUB_TOKEN:-}" ]; then
  server="${GITHUB_SERVER_URL:?GITHUB_SERVER_URL is not set}"
  remote="${server%%://*}://x-access-token:${GITHUB_TOKEN}@${server#*://}/${GITHUB_REPOSITORY:?GITHUB_REPOSITORY is not set}.git"
fi

as_bot() {
  git -c user.name="github-actions[bot]" \
    -c user.email="41898282+github-actions[bot]@users.noreply.github.com" "$@"
}

# Stage the translated paths that exist now or existed before (a deleted folder still counts).
to_stage=()
for path in "${translated[@]}"; do
  if [ -e "${path}" ] || [ -n "$(git ls-files -- "${path}")" ]; then
    to_stage+=("${path}")
  fi
done
if [ "${#to_stage[@]}" -gt 0 ]; then
  git add --all -- "${to_stage[@]}"
fi

others="$(git status --porcelain --untracked-files=all -- . "${translated[@]/#/:(exclude)}")"
if [ -n "${others}" ]; then
  echo "::warning title=Untranslated changes left out::Only translations are committed; also changed:"
  printf '%s\n' "${others}"
fi

if git diff --cached --quiet; then
  echo "No translation changed: nothing to commit."
  exit 0
fi
as_bot commit --quiet -m "docs: update translations"
git show --stat --format='Committed %h: %s' HEAD

# Rebase the commit onto the tip of BRANCH; on a conflict, leave it for that tip (see above).
pull_rebase() {
  if as_bot pull --quiet --rebase --autostash "${remote}" "${branch}"; then
    return 0
  fi
  if [ ! -d "$(git rev-parse --git-path rebase-merge)" ] &&
    [ ! -d "$(git rev-parse --git-path rebase-apply)" ]; then
    echo "::error title=Pull failed::Could not pull ${branch}; nothing was pushed."
    exit 1
  fi
  git rebase --abort
  git reset --quiet --hard FETCH_HEAD
  if [ "${last}" = true ]; then
    echo "::error title=Rebase conflict::The translations conflict with changes pushed to ${branch} again; nothing was pushed, the next run redoes them."
    exit 1
  fi
  echo "The translations conflict with changes pushed to ${branch} meanwhile: translating again from its new tip."
  echo "retranslate=true" >>"${GITHUB_OUTPUT:-/dev/stdout}"
  exit 0
}

pull_rebase
if ! git push --quiet "${remote}" "HEAD:refs/heads/${branch}"; then
  echo "The push was refused (${branch} moved meanwhile): rebasing onto its new tip and pushing once more."
  pull_rebase
  if ! git push --quiet "${remote}" "HEAD:refs/heads/${branch}"; then
    echo "::error title=Push failed::Could not push the translations to ${branch}; the next run redoes them."
    exit 1
  fi
fi
echo "Pushed to ${branch}."
