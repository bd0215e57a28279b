"""Presenting: number formatting, terminal tables, Markdown, the HTML report and its plots."""
