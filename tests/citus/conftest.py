"""Tests that need a real Citus cluster: collected only when the session runs against one
(``FAQ_TEST_DATABASE_URL``, set by ``make test-citus``), never by ``make test``."""

import os

collect_ignore_glob = [] if os.environ.get("FAQ_TEST_DATABASE_URL") else ["test_*.py"]
