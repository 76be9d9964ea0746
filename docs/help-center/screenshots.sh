#!/bin/sh
# Regenerates the screenshots of docs/help-center/ (issue 32): every page type of the help
# center in English, French and Arabic (right to left), and the Arabic pages on a phone, taken
# by the browser test that also checks them with axe-core. Needs Debian's chromium (make test
# installs it); starts the embedded PostgreSQL and Redis like the tests. Look at them after.
#   sh docs/help-center/screenshots.sh
set -eu
cd "$(dirname "$0")/../.."
FAQ_SCREENSHOTS=docs/help-center exec .venv/bin/pytest \
    tests/api/helpcenter/test_a11y_languages.py -q -p no:cacheprovider
