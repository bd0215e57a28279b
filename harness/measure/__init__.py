"""Measuring: cases, the cold-process probe (child) and runner (parent), the gradient check, the sides a
comparison opens, the measured-path trace, instruction counts, machine facts and metadata.

What a side runs *in* (a worktree, an installed revision, a built environment) is provisioned below, in
``provision/``; this stage runs processes there and reads what they measured."""
