"""Helpers shared by the tests (never imported by normjax or benchmarks)."""
