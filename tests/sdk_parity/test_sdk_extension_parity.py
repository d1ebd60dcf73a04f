"""The OpenAI Agents SDK's own AsyncSQLiteSession and ToolOutputTrimmer tests, on ours.

Same method as `test_sdk_parity.py` (the SDK's source package, names rebound in every loaded
`agents.*` module by `sdk_conftest.py`, in the same child pytest), for the two SDK extensions
that turnstore provides under the same import paths. The SDK's AsyncSQLiteSession tests import
aiosqlite (a dev dependency here, not a turnstore one) to reach the SDK class's private
connection; every test that does is listed below with that reason, and any other failure fails
the file's test.
"""

from __future__ import annotations

from typing import Any

import pytest

from sdk_parity.sdk_run import RUN_TIMEOUT, check_file

# The first test to need `sdk_results` waits for the whole child run (the others wait for it
# too): the child's own limit applies, not the suite's per-test one.
pytestmark = pytest.mark.timeout(RUN_TIMEOUT + 60)

_ASYNC = "extensions/memory/test_async_sqlite_session.py"
_TRIMMER = "extensions/test_tool_output_trimmer.py"
SDK_TEST_FILES = [_ASYNC, _TRIMMER]
SDK_SUPPORT_FILES = ["__init__.py", "test_responses.py"]

_PRIVATE = (
    "drives the SDK class's private aiosqlite connection (`_get_connection`, "
    "`_init_db_for_connection`, aiosqlite.connect or Connection.execute patched); turnstore's "
    "AsyncSQLiteSession is SQLiteSession, which runs SQLite on its own writer and reader threads "
    "and uses no aiosqlite"
)
# Tests that wait for an aiosqlite connection turnstore never opens: they would hang until the
# timeout instead of failing.
NOT_RUN = {
    f"{_ASYNC}::{name}": _PRIVATE
    for name in (
        "test_cancelled_initialization_finishes_candidate_close",
        "test_cancelled_connect_closes_eventually_acquired_connection",
        "test_initialization_failure_then_cancellation_during_candidate_close",
        "test_cancelled_wal_retry_closes_startup_connection",
    )
}
KNOWN_DIFFERENCES: dict[str, str] = {
    **{
        f"{_ASYNC}::{name}": _PRIVATE
        for name in (
            "test_async_sqlite_session_pop_item_skips_corrupt_most_recent",
            "test_async_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows",
            "test_async_sqlite_session_get_items_limit_skips_corrupt_newest_rows",
            "test_async_sqlite_session_get_items_same_timestamp_consistent_order",
            "test_async_sqlite_session_pop_item_same_timestamp_returns_latest",
            "test_cancelled_close_finishes_cleanup_and_propagates_cancellation",
            "test_post_commit_cancellation_propagates_after_known_mutation_outcome[add]",
            "test_post_commit_cancellation_propagates_after_known_mutation_outcome[pop]",
            "test_post_commit_cancellation_propagates_after_known_mutation_outcome[clear]",
            "test_failed_add_items_rolls_back_and_reuses_connection",
            "test_failed_initialization_closes_candidate_connection",
            "test_initialization_retries_transient_wal_lock",
            "test_initialization_does_not_retry_unrecoverable_wal_errors[busy-timeout-disabled]",
            "test_initialization_does_not_retry_unrecoverable_wal_errors[busy-timeout-elapsed]",
            "test_initialization_does_not_retry_unrecoverable_wal_errors[unrelated-error]",
            "test_cancelled_add_items_rolls_back_write_transaction",
            "test_operation_failure_then_cancellation_during_rollback",
            "test_rollback_failure_closes_and_evicts_connection",
            "test_close_retries_connection_quarantined_after_rollback_failure",
            "test_close_retries_quarantined_failed_initialization_candidate",
        )
    },
    **{
        f"{_ASYNC}::{name}": (
            "documented difference, as for SQLiteSession: the tables are created on the first "
            "write that succeeds, not by the constructor (no SQLite call on the event loop), so "
            "the test's raw SQL finds no table; the test also reads the private connection"
        )
        for name in (
            "test_failed_clear_session_rolls_back",
            "test_failed_pop_item_releases_write_lock",
        )
    },
}


@pytest.mark.parametrize("sdk_file", SDK_TEST_FILES)
def test_the_sdk_async_sqlite_and_trimmer_tests_pass_on_turnstore(
    sdk_results: dict[str, Any], sdk_file: str
) -> None:
    pytest.importorskip("aiosqlite", reason="the SDK's AsyncSQLiteSession tests import it")
    outcomes = check_file(sdk_results, sdk_file, KNOWN_DIFFERENCES)
    passed = [t for t, outcome in outcomes.items() if outcome == "passed"]
    print(f"SDK tests of {sdk_file} on turnstore: {len(passed)} of {len(outcomes)} passed")
    if sdk_file == _TRIMMER:
        # Every ToolOutputTrimmer test passes (they are grouped in classes: their ids hold the
        # class name).
        assert len(outcomes) >= 60
        assert len(passed) == len(outcomes)
    else:
        # The AsyncSQLiteSession tests that use only the public API pass.
        assert len(passed) >= 19
