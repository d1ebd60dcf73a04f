#!/usr/bin/env bash
# Run the translation tool for the workflow, or report the pages it failed.
#
# Usage: .github/scripts/translate.sh            translate (needs OPENAI_API_KEY)
#        .github/scripts/translate.sh --report   fail naming the pages the last translation failed
#
# The tool exits 1 when some pages failed its checks: those were not written, the others were.
# That does not fail this step, so the good pages are built and pushed; the tool's lines naming
# the failed pages (`docs/<lang>/<page>.md:<line>: <finding>` on stderr) are kept in
# $RUNNER_TEMP, and `--report`, the job's last step, fails the job with them. Any other non-zero
# exit fails the step at once. A second translation replaces what the first one kept.
set -euo pipefail

failed="${RUNNER_TEMP:?RUNNER_TEMP is not set}/translation-failures.txt"
page_line='^docs/[a-z-]+/[^:]+\.md:[0-9]+: '

if [ "${1:-}" = "--report" ]; then
  if [ ! -e "${failed}" ]; then
    echo "Every page was translated."
    exit 0
  fi
  sed -E -e 's#^(docs/[^:]+):([0-9]+): (.*)$#::error file=\1,line=\2,title=Translation failed::\1:\2: \3#; t' \
    -e 's#^#::error title=Translation failed::#' "${failed}"
  echo "The other pages were pushed; the next run retries the failed ones."
  exit 1
fi

rm -f "${failed}"
if [ -z "${OPENAI_API_KEY:-}" ]; then
  echo "::error title=Missing secret::The OPENAI_API_KEY repository secret is not set (Settings > Secrets and variables > Actions); nothing was translated."
  exit 1
fi

stderr="${RUNNER_TEMP}/translate-stderr.txt"
status=0
# stderr goes to the log as it comes and to ${stderr}; stdout to the log.
{ python scripts/translate_docs.py 2>&1 >&3 | tee "${stderr}"; } 3>&1 || status=$?
if [ "${status}" -eq 1 ]; then
  grep -E "${page_line}" "${stderr}" >"${failed}" ||
    echo "The translation tool failed pages without naming them: see the Translate step." >"${failed}"
  echo "Some pages failed and were not written; the others are pushed, then the job fails."
elif [ "${status}" -ne 0 ]; then
  exit "${status}"
fi
