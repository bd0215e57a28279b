"""Cold-start metrics of the first gradient, over model x backend x variant.

The functions live in ``ttfg.history.asv_tracks`` (asv names them after this module:
``ttfg.track_...``, and keys their history by their unchanged source). Selection and
measurement: ``ttfg.history.asv_suite``.
"""

from ttfg.history.asv_tracks import *  # noqa: F401,F403
