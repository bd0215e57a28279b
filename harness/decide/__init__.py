"""Deciding: statistics, compare, expectations, the gate, studies."""
