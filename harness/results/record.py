"""The results file, as one import: ``from ttfg.results import record``.

The format is owned by the modules beside this one, one job each: ``format`` (name,
version, field list, the number rule), ``model`` (the typed classes), ``validate``
(document -> classes, with errors naming file and field), ``migrate`` (older versions
and the format history), ``io`` (load and save). This module gathers their public
names so callers need not know the split.
"""

from .format import (COMMON_FIELDS, FORMAT, KINDS, PHASES, SAMPLE_FIELDS, VERSION, ResultsError,
                     is_number, now_iso)
from .io import dumps, from_json, load, loads, save
from .migrate import migrate_v1_to_v2
from .model import (CaseResult, ColdEvidence, DepthEntry, EffectEntry, Fingerprint, Fit, GateSection, NoiseEntry,
                    NoiseFloor, Results, Sample, ShardSection, StudySection, to_frame)
from .validate import validate

__all__ = ["COMMON_FIELDS", "FORMAT", "KINDS", "PHASES", "SAMPLE_FIELDS", "VERSION", "CaseResult",
           "ColdEvidence", "DepthEntry", "EffectEntry", "Fingerprint", "Fit", "GateSection", "NoiseEntry", "NoiseFloor",
           "Results", "ResultsError", "Sample",
           "ShardSection", "StudySection", "dumps", "from_json", "is_number", "load", "loads", "migrate_v1_to_v2", "now_iso", "save",
           "to_frame", "validate"]
