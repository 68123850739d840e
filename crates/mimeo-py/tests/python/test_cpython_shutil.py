"""CPython's own shutil tests (TestCopyTree, TestCopy, TestCopyFile of the running
interpreter's test.test_shutil) with shutil.copyfile, copy, copy2 and copytree swapped for
mimeo's. Those that mock shutil's internals are the only ones allowed to fail."""

import shutil
import unittest

import pytest

import mimeo

test_shutil = pytest.importorskip(
    "test.test_shutil", reason="the interpreter's test suite is not installed"
)

# Each mocks something mimeo does not call, so it cannot see what it waits for.
MOCKING = {
    # mocks os.chmod inside copystat
    "test_copytree_winerror",
    # mock shutil.open
    "test_w_source_close_fails",
    "test_w_dest_close_fails",
    "test_w_dest_open_fails",
    "test_w_source_open_fails",
}


def test_cpythons_copy_tests_pass_with_mimeos_functions(monkeypatch):
    for name in ("copyfile", "copy", "copy2", "copytree"):
        monkeypatch.setattr(shutil, name, getattr(mimeo, name))
    suite = unittest.TestSuite()
    loader = unittest.TestLoader()
    for case in ("TestCopyTree", "TestCopy", "TestCopyFile"):
        suite.addTests(loader.loadTestsFromTestCase(getattr(test_shutil, case)))
    names = {t.id().rsplit(".", 1)[1] for t in suite}
    # bpo-38688: a copy into a new subdirectory of the source, which must pass.
    assert "test_copytree_subdirectory" in names
    result = unittest.TestResult()
    suite.run(result)
    failed = {t.id().rsplit(".", 1)[1]: text for t, text in result.failures + result.errors}
    unexpected = {name: text for name, text in failed.items() if name not in MOCKING}
    assert unexpected == {}
    assert result.testsRun == len(names) > 30
