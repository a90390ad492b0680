"""Tocsin: a self-hostable reminder alert service."""

__version__ = "0.1.0"
