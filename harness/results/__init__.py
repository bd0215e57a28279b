"""The results file, owned here: one module per job.

* ``format``: the name, the version, the sample field list, the one number check.
* ``model``: the typed classes (Sample, ColdEvidence, CaseResult, Results, GateSection, StudySection).
* ``validate``: a document into the classes, with errors that name the file and the field.
* ``migrate``: older versions into the current one; the dated format history.
* ``io``: load and save (strict JSON, through the one atomic writer ``ttfg.files``).
* ``writer``: a results file that grows one sample at a time (the runner and the gate).
* ``record``: all of the above under one name.
"""
