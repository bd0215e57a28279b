"""Presenting: terminal tables, Markdown, the HTML report and its plots.

Primitives at the bottom (``terminal.py``: console, tables that fit, case columns, verdict
colours; ``markdown_table.py``: Markdown tables; ``untrusted.py``: escaping), one view
module per subject above them (``run_views``, ``study_views``, ``compare_views``,
``gate_views``...), and the page (``report.py``) on top. The trends are analysed before
the page (steps found, confirmations applied: ``app/report.py``), which only shows them.
"""
