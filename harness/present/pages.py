"""Every HTML page ttfg writes, rendered from one jinja2 environment: escaped by default, strict about names.

Why one environment: the report (``report.py``), a bisect's page (``bisect_page.py``) and a release
sweep's page (``releases_views.py``) all show text that ttfg did not write (commit subjects and
authors, error messages, reasons read back from a file). Built by hand beside the report's template,
each page escaped that text its own way, and one missed call would have been a script in the page.
Here every value a template prints is HTML-escaped unless the code that built it marks it as markup
(``markupsafe.Markup``: a plot's inline SVG, a sparkline drawn from numbers), and a name a template
uses that its context lacks is an error (``StrictUndefined``), not an empty cell. The templates live
in ``templates/`` (installed with the package: ``pyproject.toml``'s package-data).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

__all__ = ["TEMPLATES", "render"]

#: The pages' templates (``*.html.j2``).
TEMPLATES = Path(__file__).with_name("templates")


@cache
def _environment():
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    return Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=True, undefined=StrictUndefined,
                       trim_blocks=True, lstrip_blocks=True)


def render(template: str, **context) -> str:
    """The page ``template`` (a file in :data:`TEMPLATES`) drawn from ``context``."""
    return _environment().get_template(template).render(**context)
