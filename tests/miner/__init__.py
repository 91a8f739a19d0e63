"""Tests of the miner area."""
