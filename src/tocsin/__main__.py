"""Lets `python -m tocsin` run the command line."""

from tocsin.cli import main

raise SystemExit(main())
