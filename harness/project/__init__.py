"""The measured project as its own repository sees it: configuration and scaffolding.

A library maintainer guards *their* project with ttfg, not ttfg's own repository. This
stage holds what belongs to that project and to no single command:

- ``config.py``: ``[tool.ttfg]`` in the project's ``pyproject.toml`` (or a ``ttfg.toml``),
  read once, validated with the file and key named, and turned into every command's
  defaults (flags still win);
- ``pyproject.py``: facts read from the project's ``pyproject.toml`` without building it
  (its name, its ttfg plugins, its layout);
- ``declarations.py``: the files that declare the project's dependencies (the pull-request
  workflow's ``paths:``) and the framework it declares (the starter backend's, with what was
  declared where and why it was chosen);
- ``default_branch.py``: the branch the trend workflow and asv follow (never the current one);
- ``ttfg_source.py``: the requirement a CI runner installs ttfg with (where this ttfg came from);
- ``asv_selection.py``: the config's selection for a plain ``asv run`` (the suites file calls it);
- ``scaffold.py`` and ``templates/``: what ``ttfg init`` writes into the repository.

It sits between the deciding stages and the command line: ``cli`` imports it, and it
imports nothing above ``provision`` (git lives in ``provision.worktrees``).
"""
