"""Provisioning: what a measured process runs in, built before anything is measured and cached between runs.

- ``worktrees.py``: revisions resolved and checked out in throwaway git worktrees (the one git runner);
- ``submodules.py``: a checked-out revision's submodules, at the commits it records, recursively;
- ``sources.py``: a revision's project installed into a cached folder, and where an interpreter imports it from;
- ``project_source.py``: the user's project as built environments import it (a commit, or a snapshot of the tree);
- ``uv.py``, ``environments.py``, ``env_cache.py``: environments (an interpreter plus exact packages) built with
  uv, keyed by content, listed and pruned;
- ``dependencies.py``: what a revision's own declarations resolve to (uv reads them);
- ``releases.py``: a framework's published releases, for a release sweep;
- ``cache.py``: the cache folder's rules (a marker makes an entry valid; one builder at a time);
- ``target.py``: where a probe runs: the environment it stands for (``Environment``: an interpreter and what it
  holds), its interpreter and import roots, and the one builder of a child's environment.

Nothing here measures or decides: ``measure/`` opens sides from these parts and runs its probes in them
(uv's split of resolver, installer and cache from what uses them is the model).
"""
