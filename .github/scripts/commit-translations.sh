#!/usr/bin/env bash
# Commit the translated pages and the translation manifest, and push them to BRANCH on origin.
#
# Usage: [GITHUB_TOKEN=...] .github/scripts/commit-translations.sh BRANCH
#
# Only docs/ja, docs/ko, docs/zh and i18n/manifest.json are staged (additions, edits and
# deletions); any other change in the working tree is reported and left out. Nothing is
# committed or pushed when those paths did not change. When origin/BRANCH moved since the
# checkout, the commit is rebased onto it and the push retried (a few times at most); a rebase
# conflict aborts the rebase and fails without pushing.
#
# With GITHUB_TOKEN set (the workflow's commit step only: its checkout keeps no credentials), it
# fetches and pushes through an authenticated URL of $GITHUB_SERVER_URL/$GITHUB_REPOSITORY that
# lives only in this process; without it, through the `origin` remote as it is.
set -euo pipefail

branch="${1:?usage: commit-translations.sh BRANCH}"
translated=(docs/ja docs/ko docs/zh i18n/manifest.json)
bot_name="github-actions[bot]"
bot_email="41898282+github-actions[bot]@users.noreply.github.com"
message="docs: update translations"

remote=origin
if [ -n "${GITHUB_TOKEN:-}" ]; then
  server="${GITHUB_SERVER_URL:?GITHUB_SERVER_URL is not set}"
  remote="${server%%://*}://x-access-token:${GITHUB_TOKEN}@${server#*://}/${GITHUB_REPOSITORY:?GITHUB_REPOSITORY is not set}.git"
fi

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

others="$(git status --porcelain --untracked-files=all -- . \
  ':(exclude)docs/ja' ':(exclude)docs/ko' ':(exclude)docs/zh' ':(exclude)i18n/manifest.json')"
if [ -n "${others}" ]; then
  echo "::warning title=Untranslated changes left out::Only translations are committed; also changed:"
  printf '%s\n' "${others}"
fi

if git diff --cached --quiet; then
  echo "No translation changed: nothing to commit."
  exit 0
fi

git -c user.name="${bot_name}" -c user.email="${bot_email}" commit --quiet -m "${message}"
git show --stat --format='Committed %h: %s' HEAD

for attempt in 1 2 3; do
  if git push "${remote}" "HEAD:refs/heads/${branch}"; then
    echo "Pushed to ${branch}."
    exit 0
  fi
  echo "Push attempt ${attempt} was rejected; rebasing onto ${branch} as it is now."
  git fetch "${remote}" "${branch}"
  if ! git -c user.name="${bot_name}" -c user.email="${bot_email}" \
    rebase --autostash FETCH_HEAD; then
    git rebase --abort || true
    echo "::error title=Rebase conflict::The translations conflict with changes pushed to ${branch}; the next run will redo them."
    exit 1
  fi
done
echo "::error title=Push failed::Could not push the translations to ${branch}."
exit 1
