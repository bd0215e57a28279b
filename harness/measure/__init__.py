"""Measuring: cases, the cold-process probe (child) and runner (parent), the gradient check, environment metadata, git worktrees."""
