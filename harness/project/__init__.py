"""The measured project as its own repository sees it: configuration and scaffolding.

A library maintainer guards *their* project with ttfg, not ttfg's own repository. This
stage holds what belongs to that project and to no single command:

- ``config.py``: ``[tool.ttfg]`` in the project's ``pyproject.toml`` (or a ``ttfg.toml``),
  read once, validated with the file and key named, and turned into every command's
  defaults (flags still win);
- ``pyproject.py``: facts read from the project's ``pyproject.toml`` without building it
  (its name, its ttfg plugins, its layout);
- ``scaffold.py`` and ``templates/``: what ``ttfg init`` writes into the repository.

It sits between the deciding stages and the command line: ``cli`` imports it, and it
imports nothing above ``measure`` (git lives in ``measure.worktrees``).
"""
