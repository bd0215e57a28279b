"""asv benchmark suites for ttfg; asv imports this package from ``benchmark_dir``.

Which ``harness`` gets measured. In environments asv builds (``virtualenv``), asv installs
each commit's project and sets ``ASV_ENV_TYPE``; the installed harness is that commit's.
In an existing environment (``--environment existing:...``, ``ttfg asv record``) asv
installs nothing, sets no ``ASV_ENV_TYPE``, and the interpreter may import any harness
(an editable install of another checkout, say). There the harness beside these suites
goes first on ``sys.path``, so results filed under a commit measure the checkout that
holds the suites.
"""

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

if os.environ.get("ASV_ENV_TYPE", "existing") == "existing" and _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
